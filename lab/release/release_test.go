package release

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/stages"
)

func TestFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, etcd, shipped, kube string
	}{
		{"4.16", "3.5.14", "3.5.14", "1.29.6"},
		{"4.19.10", "3.5.21", "3.5.26", "1.32.13"},
		{"v4.18.0-ec.3", "3.5.16", "3.5.18", "1.31.14"},
		{"4.22.1", "3.6.5", "3.6.5", "1.35.4"},
	} {
		r, err := For(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.etcd, r.Etcd.Module, tc.in)
		assert.Equal(t, tc.shipped, r.Etcd.Shipped, tc.in)
		assert.Equal(t, tc.kube, r.Kubernetes, tc.in)
	}
}

func TestForRefusesUnknownAndMalformed(t *testing.T) {
	t.Parallel()
	_, err := For("4.15.3")
	assert.ErrorContains(t, err, "4.16 through 4.22")
	_, err = For("four")
	assert.ErrorContains(t, err, "want major.minor")
}

// The table covers exactly the releases the stage catalog models, and
// every built etcd that differs from the shipped one says why.
func TestTableMatchesTheCatalogAndExplainsEveryDifference(t *testing.T) {
	t.Parallel()
	all := All()
	require.NotEmpty(t, all)
	assert.Equal(t, stages.Oldest.String(), all[0].OpenShift)
	assert.Equal(t, stages.Newest.String(), all[len(all)-1].OpenShift)
	for i, r := range all {
		if i > 0 {
			assert.Equal(t, stages.MustVersion(all[i-1].OpenShift).Minor+1, stages.MustVersion(r.OpenShift).Minor, "table order at %s", r.OpenShift)
		}
		assert.Equal(t, r.Etcd.Shipped != r.Etcd.Module, r.Etcd.Why != "", "%s: Why is set exactly when the built etcd differs", r.OpenShift)
		assert.True(t, strings.HasPrefix(r.Etcd.Source, "openshift/etcd openshift-"+r.OpenShift+"@"), r.OpenShift)
		assert.Equal(t, strings.SplitN(r.Etcd.Shipped, ".", 3)[:2], strings.SplitN(r.Etcd.Module, ".", 3)[:2], "%s: same etcd minor", r.OpenShift)
		assert.True(t, strings.HasPrefix(r.Etcd.Module, stages.MustVersion(r.OpenShift).EtcdMinor()+"."), "%s: stage 07's check expects etcd %s", r.OpenShift, stages.MustVersion(r.OpenShift).EtcdMinor())
	}
}
