package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// etcd's v3 JSON API answers become members sorted by name, unstarted
// learners last, the leader marked from the status; bad JSON names the
// request.
func TestParseEtcdMembers(t *testing.T) {
	t.Parallel()
	list := `{"header":{"member_id":"1"},"members":[
{"ID":"12345678901234567890","name":"master-0","peerURLs":["https://10.0.0.11:2380"],"isLearner":true},
{"ID":"17","peerURLs":["https://10.0.0.12:2380"],"isLearner":true},
{"ID":"255","name":"etcd-bootstrap","peerURLs":["https://10.0.0.10:2380"],"clientURLs":["https://10.0.0.10:2379"]}]}`
	status := `{"header":{"member_id":"255"},"version":"3.5.21","leader":"255","raftTerm":"2"}`
	tests := []struct {
		name, list, status string
		want               []EtcdMember
		err                string
	}{
		{name: "bootstrap leads, a learner joins", list: list, status: status, want: []EtcdMember{
			{ID: "ff", Name: "etcd-bootstrap", PeerURL: "https://10.0.0.10:2380", Leader: true},
			{ID: "ab54a98ceb1f0ad2", Name: "master-0", PeerURL: "https://10.0.0.11:2380", Learner: true},
			{ID: "11", PeerURL: "https://10.0.0.12:2380", Learner: true}}},
		{name: "no leader known", list: `{"members":[{"ID":"1","name":"a","peerURLs":["http://x:1"]}]}`, status: `{"header":{}}`,
			want: []EtcdMember{{ID: "1", Name: "a", PeerURL: "http://x:1"}}},
		{name: "bad list", list: `nope`, status: status, err: "etcd member list"},
		{name: "an ID as a number, not as the API writes it", list: `{"members":[{"ID":1}]}`, status: status, err: "etcd member list"},
		{name: "bad status", list: list, status: `{`, err: "etcd endpoint status"},
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
