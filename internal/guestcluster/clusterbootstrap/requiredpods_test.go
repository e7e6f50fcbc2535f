package clusterbootstrap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cluster-bootstrap's required pods a rehearsal lab's masters run (the
// wait holds for them) and those it does not (the wait says so).
func TestMastersRunTheirControlPlanePods(t *testing.T) {
	t.Parallel()
	rs, err := parseRequiredPods("openshift-kube-apiserver/kube-apiserver,openshift-kube-scheduler/openshift-kube-scheduler," +
		"openshift-kube-controller-manager/kube-controller-manager,openshift-cluster-version/cluster-version-operator")
	require.NoError(t, err)
	got := map[string]bool{}
	for _, r := range rs {
		got[r.String()] = mastersRun(r)
	}
	assert.Equal(t, map[string]bool{"openshift-kube-apiserver/kube-apiserver": true, "openshift-kube-scheduler/openshift-kube-scheduler": true,
		"openshift-kube-controller-manager/kube-controller-manager": true, "openshift-cluster-version/cluster-version-operator": false}, got)
}

// The wait ends once every required pod the masters run is Ready, whatever
// the pods they do not run say; one of theirs not Ready holds it.
func TestMastersRunReady(t *testing.T) {
	t.Parallel()
	kas, cvo := requiredPod{"openshift-kube-apiserver", "kube-apiserver"}, requiredPod{"openshift-cluster-version", "cluster-version-operator"}
	assert.True(t, mastersRunReady(map[requiredPod]podStatus{kas: podReady, cvo: podDoesNotExist}))
	assert.False(t, mastersRunReady(map[requiredPod]podStatus{kas: podRunningNotReady, cvo: podDoesNotExist}))
	assert.False(t, mastersRunReady(map[requiredPod]podStatus{kas: podDoesNotExist, cvo: podReady}))
}
