package stages

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The timeline says, after each stage, what the bootstrap runs and who
// answers the API and the MCS: nobody before 12, the bootstrap's MCS from
// 12, the API handed over in 13, the masters from 14, then the pivot.
func TestTimelineFollowsTheCatalog(t *testing.T) {
	t.Parallel()
	tl := Default().Timeline()
	require.Len(t, tl.Rows, 16, "fifteen stages and the pivot")
	want := map[string][3]string{
		"01 openshift-manifests":        {"nothing yet: stages 01-06 render files", "nobody", "nobody"},
		"06 cvo-bootstrap":              {"nothing yet: stages 01-06 render files", "nobody", "nobody"},
		"07 etcd-bootstrap":             {"etcd (the etcd-bootstrap member pod)", "nobody", "nobody"},
		"11 ingress-operator-bootstrap": {"etcd (the etcd-bootstrap member pod)", "nobody", "nobody"},
		"12 mco-bootstrap":              {"etcd, the bootstrap MCS", "nobody", "the bootstrap"},
		"13 cb-bootstrap":               {"etcd, the MCS, the temporary control plane until the hand-over", "the bootstrap, then the masters", "the bootstrap"},
		"14 cvo-overrides":              {"the MCS pod removed; wait-for-ceo until EtcdRunningInCluster (etcd-bootstrap still a member)", "the masters", "the masters"},
		"15 check-api-url":              {"nothing: .bootkube.done written; progress.service creates kube-system/bootstrap", "the masters", "the masters"},
		"lab pivot":                     {"out of the load balancer (a real lab destroys the VM)", "the masters", "the masters"},
	}
	seen := 0
	for _, r := range tl.Rows {
		w, ok := want[r.Label]
		if !ok {
			continue
		}
		seen++
		require.Len(t, r.Cells, 3)
		assert.Equal(t, w, [3]string{r.Cells[0].Text, r.Cells[1].Text, r.Cells[2].Text}, r.Label)
	}
	assert.Equal(t, len(want), seen)
}

// The rehearsal lab's etcd membership: 1 after 07, masters+1 during 13
// (the masters join once its API answers, not after 12) and through 14
// (wait-for-ceo returns on EtcdRunningInCluster), masters after 15 (the
// teardown waits for kube-system/bootstrap, which progress.service writes
// after .bootkube.done).
func TestEtcdMembership(t *testing.T) {
	t.Parallel()
	m := Default().EtcdMembership(3)
	assert.Equal(t, "etcd membership on the rehearsal lab: 1 -> 4 -> 3", m.Title)
	require.Len(t, m.Steps, 3)
	var got [][]string
	for _, st := range m.Steps {
		var names []string
		for _, mem := range st.Members {
			names = append(names, mem.Name)
		}
		got = append(got, names)
	}
	assert.Equal(t, [][]string{
		{"etcd-bootstrap"},
		{"etcd-bootstrap", "master-0", "master-1", "master-2"},
		{"master-0", "master-1", "master-2"},
	}, got)
	assert.Equal(t, "after stage 07 etcd-bootstrap", m.Steps[0].Label)
	assert.Equal(t, "during stage 13 cb-bootstrap", m.Steps[1].Label)
	assert.Contains(t, m.Steps[1].How, "member add --learner")
	assert.Equal(t, "after stage 15 check-api-url", m.Steps[2].Label)
	assert.Contains(t, m.Steps[2].How, "progress.service")
	assert.Len(t, Default().EtcdMembership(1).Steps[1].Members, 2, "one master: 1 -> 2 -> 1")
}
