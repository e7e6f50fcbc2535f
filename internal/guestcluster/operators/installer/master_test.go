package installer

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
)

// A master's kube-apiserver revision names the masters' voting members,
// never the bootstrap's (gone at stage 14) nor a learner or an unstarted
// member, and waits until this master's own member votes.
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
