package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// etcdctl's JSON becomes members sorted by name, unstarted learners last,
// the leader marked from endpoint status; bad JSON names the command.
func TestParseEtcdMembers(t *testing.T) {
	t.Parallel()
	list := `{"header":{"member_id":1},"members":[
{"ID":12345678901234567890,"name":"master-0","peerURLs":["https://10.0.0.11:2380"],"isLearner":true},
{"ID":17,"peerURLs":["https://10.0.0.12:2380"],"isLearner":true},
{"ID":255,"name":"etcd-bootstrap","peerURLs":["https://10.0.0.10:2380"],"clientURLs":["https://10.0.0.10:2379"]}]}`
	status := `[{"Endpoint":"https://10.0.0.10:2379","Status":{"header":{"member_id":255},"leader":255}}]`
	tests := []struct {
		name, list, status string
		want               []EtcdMember
		err                string
	}{
		{name: "bootstrap leads, a learner joins", list: list, status: status, want: []EtcdMember{
			{ID: "ff", Name: "etcd-bootstrap", PeerURL: "https://10.0.0.10:2380", Leader: true},
			{ID: "ab54a98ceb1f0ad2", Name: "master-0", PeerURL: "https://10.0.0.11:2380", Learner: true},
			{ID: "11", PeerURL: "https://10.0.0.12:2380", Learner: true}}},
		{name: "no leader known", list: `{"members":[{"ID":1,"name":"a","peerURLs":["http://x:1"]}]}`, status: `[]`,
			want: []EtcdMember{{ID: "1", Name: "a", PeerURL: "http://x:1"}}},
		{name: "bad list", list: `nope`, status: status, err: "etcdctl member list"},
		{name: "bad status", list: list, status: `{`, err: "etcdctl endpoint status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEtcdMembers([]byte(tc.list), []byte(tc.status))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, "10.0.0.12", EtcdMember{PeerURL: "https://10.0.0.12:2380"}.Host())
}
