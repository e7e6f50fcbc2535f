//go:build e2e

package e2e

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
)

// exitRE matches the kubelet stand-in's line for a container that exited:
// its pod and the last line the program wrote.
var exitRE = regexp.MustCompile(`kubelet stand-in: container exited.*? pod=(\S+).*? last=(.*)$`)

// logControlPlaneExits logs, from a node's console log, how often each
// control-plane pod's program exited (the kubelet stand-in restarts it
// after a back-off) and the last line of each exit: the measurement
// issue 54 asks for of the leader election under TCG (a program that loses
// its lease exits with "leaderelection lost").
func logControlPlaneExits(t *testing.T, node, console string) {
	t.Helper()
	data, err := os.ReadFile(console)
	require.NoError(t, err)
	exits := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		m := exitRE.FindStringSubmatch(line)
		if m == nil || !isControlPlanePod(m[1]) {
			continue
		}
		exits[m[1]] = append(exits[m[1]], strings.Trim(strings.TrimSpace(m[2]), `"`))
	}
	if len(exits) == 0 {
		t.Logf("BENCH rehearsal %s: no control-plane program exited", node)
		return
	}
	pods := make([]string, 0, len(exits))
	for p := range exits {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, p := range pods {
		lease := 0
		for _, l := range exits[p] {
			if strings.Contains(strings.ToLower(l), "leaderelection lost") { // the scheduler says "Leaderelection lost"
				lease++
			}
		}
		t.Logf("BENCH rehearsal %s: %s exited %d times (%d on a lost lease); last: %s", node, p, len(exits[p]), lease, exits[p][len(exits[p])-1])
	}
}

// isControlPlanePod is true for the bootstrap's and the masters'
// kube-apiserver, controller manager and scheduler pods.
func isControlPlanePod(pod string) bool {
	for _, c := range controlplane.Components() {
		if strings.Contains(pod, string(c)) {
			return true
		}
	}
	return false
}

// assertBootstrapPodFlags reads the pods stages 08-10 rendered and the
// FeatureGate stage 05 resolved on the node and holds the pods to the
// flags internal/controlplane gives for them: OpenShift's leader election
// and, for the kube-apiserver and controller manager, the gates of the
// FeatureGate the release's Kubernetes knows.
func assertBootstrapPodFlags(t *testing.T, cat func(path string) string, version string) {
	t.Helper()
	fg, err := controlplane.ParseFeatureGate([]byte(cat("/opt/openshift/"+controlplane.FeatureGateManifest)), version)
	require.NoError(t, err)
	in := controlplane.Input{OpenShift: version, FeatureGates: fg}
	if n, err := controlplane.ParseNetwork([]byte(cat("/opt/openshift/" + controlplane.NetworkManifest))); assert.NoError(t, err) {
		in.ServiceCIDR, in.ClusterCIDR = n.ServiceCIDR, n.ClusterCIDR
	}
	gates := controlplane.KubernetesFeatureGates(fg, version)
	for _, c := range controlplane.Components() {
		w := controlplane.Wanted(c, in)
		doc := cat("/opt/openshift/bootstrap-manifests/" + w.File)
		assert.NoError(t, controlplane.CheckPod(c, in, []byte(doc)), "%s: the rendered pod's flags", c)
		if c != controlplane.KubeScheduler && len(gates) > 0 {
			assert.Contains(t, doc, "--feature-gates="+strings.Join(gates, ","), "%s passes the gates of the FeatureGate Kubernetes knows", c)
		}
	}
	t.Logf("the bootstrap pods' feature gates, from the node's FeatureGate for %s: %v", version, gates)
}
