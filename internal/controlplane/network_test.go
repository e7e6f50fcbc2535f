package controlplane

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Network config, as the installer writes it (YAML) and as the API
// serves it (JSON), gives the pods' networks; a Network that lists none
// leaves the defaults; another kind is refused.
func TestParseNetwork(t *testing.T) {
	t.Parallel()
	manifest := "apiVersion: config.openshift.io/v1\nkind: Network\nmetadata: {name: cluster}\n" +
		"spec:\n  clusterNetwork:\n  - {cidr: 10.132.0.0/14, hostPrefix: 23}\n  - {cidr: 10.136.0.0/14, hostPrefix: 23}\n" +
		"  networkType: OVNKubernetes\n  serviceNetwork: [172.31.0.0/16]\n"
	n, err := ParseNetwork([]byte(manifest))
	require.NoError(t, err)
	assert.Equal(t, Network{ServiceCIDR: "172.31.0.0/16", ClusterCIDR: "10.132.0.0/14,10.136.0.0/14"}, n)

	n, err = ParseNetwork([]byte(`{"apiVersion":"config.openshift.io/v1","kind":"Network","metadata":{"name":"cluster"},"spec":{"serviceNetwork":["172.31.0.0/16"]}}`))
	require.NoError(t, err)
	assert.Equal(t, Network{ServiceCIDR: "172.31.0.0/16"}, n)
	in := Input{ServiceCIDR: n.ServiceCIDR, ClusterCIDR: n.ClusterCIDR}.withDefaults()
	assert.Equal(t, DefaultClusterCIDR, in.ClusterCIDR, "what the Network does not list is the default")

	_, err = ParseNetwork([]byte("kind: Infrastructure\n"))
	assert.EqualError(t, err, `is a "Infrastructure", want the config.openshift.io/v1 Network`)
	_, err = ParseNetwork([]byte("kind: [Network"))
	assert.ErrorContains(t, err, "the Network config does not parse")
}

// A service network other than OpenShift's default reaches the
// kube-apiserver's --service-cluster-ip-range on the bootstrap and on the
// masters, and the controller managers' with the pod network; a pod
// rendered for the default fails the check for another network.
func TestThePodsTakeTheClustersNetworks(t *testing.T) {
	t.Parallel()
	const svc, pods = "172.31.0.0/16", "10.132.0.0/14"
	in := Input{ServiceCIDR: svc, ClusterCIDR: pods}
	assert.Contains(t, KubeAPIServerArgs(in), "--service-cluster-ip-range="+svc)
	assert.Contains(t, KubeControllerManagerArgs(in), "--service-cluster-ip-range="+svc)
	assert.Contains(t, KubeControllerManagerArgs(in), "--cluster-cidr="+pods)
	master := MasterInput{ServiceCIDR: svc, ClusterCIDR: pods}
	assert.Contains(t, MasterKubeAPIServerArgs(master), "--service-cluster-ip-range="+svc)
	assert.Contains(t, KubeControllerManagerOperand.Args(master), "--service-cluster-ip-range="+svc)
	assert.Contains(t, KubeControllerManagerOperand.Args(master), "--cluster-cidr="+pods)
	assert.Contains(t, KubeControllerManagerOperand.Args(MasterInput{}), "--cluster-cidr="+DefaultClusterCIDR)

	doc := podYAML(t, BootstrapPod(KubeAPIServer, in, "hk"))
	assert.NoError(t, CheckPod(KubeAPIServer, in, doc))
	err := CheckPod(KubeAPIServer, Input{ServiceCIDR: svc}, podYAML(t, BootstrapPod(KubeAPIServer, Input{}, "hk")))
	assert.ErrorContains(t, err, `--service-cluster-ip-range is "172.30.0.0/16", want "172.31.0.0/16"`)
}
