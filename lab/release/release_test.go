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

// checksums.txt has exactly one line per artefact the table's versions
// download, in table order: a version added to the table without its
// lines (or a line left behind by a removed one) fails here.
func TestChecksumsTableListsExactlyTheWantedArtefacts(t *testing.T) {
	t.Parallel()
	var keys []string
	for _, line := range strings.Split(checksums, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			_, key, _ := strings.Cut(line, "  ")
			keys = append(keys, key)
		}
	}
	assert.Equal(t, Wanted(All()), keys, "%s: add a \"-  <path>\" line per new artefact and run `make pin-checksums`", ChecksumsFile)
	_, err := ParseChecksums(checksums)
	require.NoError(t, err)
}

func TestArtefactsFollowTheProjectsLayouts(t *testing.T) {
	t.Parallel()
	r, err := For("4.19")
	require.NoError(t, err)
	var keys []string
	for _, a := range r.KubernetesArtefacts() {
		keys = append(keys, a.Key())
	}
	assert.Equal(t, []string{
		"kubernetes/v1.32.13/bin/linux/amd64/kube-apiserver",
		"kubernetes/v1.32.13/bin/linux/amd64/kube-controller-manager",
		"kubernetes/v1.32.13/bin/linux/amd64/kube-scheduler",
		"kubernetes/v1.32.13/bin/linux/amd64/kubectl",
	}, keys)
	e := r.EtcdArtefact()
	assert.Equal(t, "etcd/v3.5.26/etcd-v3.5.26-linux-amd64.tar.gz", e.Key(), "the shipped etcd, not the one built")
	assert.Equal(t, "etcd-v3.5.26-linux-amd64.tar.gz", e.Name())

	sum := strings.Repeat("ab", 32)
	r.Checksums = map[string]string{"kubernetes/v1.32.13/bin/linux/amd64/kubectl": sum}
	as := r.KubernetesArtefacts()
	assert.Equal(t, sum, as[3].SHA256)
	assert.Equal(t, []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}, Unpinned(as))
}

func TestParseChecksumsRefusesWhatItCannotTrust(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("0f", 32)
	got, err := ParseChecksums("# comment\n\n" + sum + "  etcd/v3.5.26/etcd-v3.5.26-linux-amd64.tar.gz\n-  kubernetes/v1.32.13/bin/linux/amd64/kubectl\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"etcd/v3.5.26/etcd-v3.5.26-linux-amd64.tar.gz": sum}, got)
	for in, want := range map[string]string{
		"abc  etcd/v1/x.tar.gz":                     "not 64 lowercase hex digits",
		strings.ToUpper(sum) + "  etcd/v1/x.tar.gz": "not 64 lowercase hex digits",
		sum + " etcd/v1/x.tar.gz":                   "two spaces",
		sum + "  quay/v1/x":                         "starts with kubernetes/ or etcd/",
		"-  etcd/v1/x.tar.gz\n-  etcd/v1/x.tar.gz":  "line 2: etcd/v1/x.tar.gz is listed twice",
	} {
		_, err := ParseChecksums(in)
		assert.ErrorContains(t, err, want, in)
	}
}
