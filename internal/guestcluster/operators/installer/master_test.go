package installer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
)

// votingMasters names the masters' voting members, not the bootstrap's,
// a learner or an unstarted member, and says whether this master's own
// member votes (what the installer waits for).
func TestVotingMasters(t *testing.T) {
	t.Parallel()
	m := func(name, ip string, learner bool) etcd.Member {
		return etcd.Member{Name: name, PeerURLs: []string{"https://" + ip + ":2380"}, ClientURLs: []string{"https://" + ip + ":2379"}, IsLearner: learner}
	}
	boot := m(etcd.BootstrapMemberName, "192.168.126.10", false)
	for _, tc := range []struct {
		name    string
		ms      []etcd.Member
		servers []string
		ok      bool
	}{
		{"learner", []etcd.Member{boot, m("master-0", "192.168.126.11", true)}, nil, false},
		{"unstarted", []etcd.Member{boot, m("", "192.168.126.11", false)}, nil, false},
		{"voter", []etcd.Member{boot, m("master-0", "192.168.126.11", false), m("master-1", "192.168.126.12", true)},
			[]string{"https://192.168.126.11:2379"}, true},
		{"others vote, not this one", []etcd.Member{boot, m("master-1", "192.168.126.12", false)}, []string{"https://192.168.126.12:2379"}, false},
		{"three", []etcd.Member{m("master-0", "192.168.126.11", false), m("master-1", "192.168.126.12", false), m("master-2", "192.168.126.13", false)},
			[]string{"https://192.168.126.11:2379", "https://192.168.126.12:2379", "https://192.168.126.13:2379"}, true},
	} {
		servers, ok := votingMasters(tc.ms, "https://192.168.126.11:2380")
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.servers, servers, tc.name)
	}
}

// --etcd-servers as library-go's endpoint observer gives the
// kube-apiserver (observe_etcd_endpoints.go, always with localhost): every
// voting member, the bootstrap's while it is one, and
// https://localhost:2379, sorted; a learner or an unstarted member is not
// listed. Once the bootstrap member is gone, the next revision has not it.
func TestEtcdServersAsTheEndpointObserver(t *testing.T) {
	t.Parallel()
	m := func(name, ip string, learner bool) etcd.Member {
		return etcd.Member{Name: name, PeerURLs: []string{"https://" + ip + ":2380"}, ClientURLs: []string{"https://" + ip + ":2379"}, IsLearner: learner}
	}
	boot := m(etcd.BootstrapMemberName, "192.168.126.10", false)
	assert.Equal(t, []string{"https://192.168.126.10:2379", "https://192.168.126.11:2379", "https://localhost:2379"},
		etcdServers([]etcd.Member{m("master-0", "192.168.126.11", false), boot, m("master-1", "192.168.126.12", true), m("", "192.168.126.13", false)}))
	assert.Equal(t, []string{"https://192.168.126.11:2379", "https://192.168.126.12:2379", "https://localhost:2379"},
		etcdServers([]etcd.Member{m("master-1", "192.168.126.12", false), m("master-0", "192.168.126.11", false)}))
	in := controlplane.MasterInput{Revision: 1, EtcdServers: etcdServers([]etcd.Member{boot, m("master-0", "192.168.126.11", false)})}
	next, changed := nextRevision(in, []etcd.Member{m("master-0", "192.168.126.11", false)})
	assert.True(t, changed)
	assert.Equal(t, 2, next.Revision, "revision 2 once etcd-bootstrap is gone")
	assert.Equal(t, []string{"https://192.168.126.11:2379", "https://localhost:2379"}, next.EtcdServers)
	_, changed = nextRevision(next, []etcd.Member{m("master-0", "192.168.126.11", false)})
	assert.False(t, changed, "the same members: no new revision")
	next, _ = nextRevision(controlplane.MasterInput{}, []etcd.Member{m("master-0", "192.168.126.11", false)})
	assert.Equal(t, 2, next.Revision, "the default revision is 1: the next is 2")
	assert.True(t, hasBootstrap([]etcd.Member{boot}))
	assert.False(t, hasBootstrap([]etcd.Member{m("master-0", "192.168.126.11", false)}))
}

// After a reboot the installer writes each operand's kept revision again
// (the same pod, which the kubelet keeps running), never a step back.
func TestKeptRevisionIsThePodOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := controlplane.MasterInput{AdvertiseAddress: "10.0.0.11", EtcdServers: []string{"https://localhost:2379"}, Revision: 1}
	assert.Equal(t, 1, keptRevision(dir, controlplane.KubeAPIServerOperand, in).Revision, "no pod: a first boot")

	two := in
	two.Revision = 2
	pod := controlplane.KubeAPIServerOperand.Pod(two, "")
	data, err := yaml.Marshal(pod.Pod)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, pod.File), data, 0o644))
	got := keptRevision(dir, controlplane.KubeAPIServerOperand, in)
	assert.Equal(t, 2, got.Revision)
	assert.Equal(t, in.EtcdServers, got.EtcdServers, "only the revision is taken from the disk")
	assert.Equal(t, 1, keptRevision(dir, controlplane.KubeSchedulerOperand, in).Revision, "each operand its own pod")

	require.NoError(t, os.WriteFile(filepath.Join(dir, pod.File), []byte("{not yaml"), 0o644))
	assert.Equal(t, 1, keptRevision(dir, controlplane.KubeAPIServerOperand, in).Revision, "an unreadable pod counts as none")
}
