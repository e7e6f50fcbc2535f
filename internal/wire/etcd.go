package wire

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"time"
)

// EtcdMember is one etcd member as a rehearsal master's agent last listed
// it: the host keeps no etcd client certificate, the masters do, so the
// dashboard learns the members from the agents' reports.
type EtcdMember struct {
	// ID is the member ID in hex, as etcdctl's table prints it.
	ID string `json:"id"`
	// Name is empty for a learner added but not started yet.
	Name    string `json:"name,omitempty"`
	PeerURL string `json:"peerURL"`
	Learner bool   `json:"learner,omitempty"`
	Leader  bool   `json:"leader,omitempty"`
}

// Host is the address of the member's peer URL: which node it runs on.
func (m EtcdMember) Host() string {
	u, err := url.Parse(m.PeerURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// EtcdMembers is the member list an agent read, from where and when.
type EtcdMembers struct {
	// Endpoint is the client URL that answered (or the last one tried).
	Endpoint string       `json:"endpoint"`
	Time     time.Time    `json:"time"`
	Members  []EtcdMember `json:"members"`
	// Error says why no endpoint answered (Members is then empty).
	Error string `json:"error,omitempty"`
}

// ParseEtcdMembers reads the answers of etcd's v3 JSON API to a member
// list and to one endpoint's status (it names the leader), the requests
// `etcdctl member list` and `etcdctl endpoint status` send, into members
// sorted by name, unstarted learners last. The API writes the uint64 IDs
// as strings, as protobuf's JSON mapping does.
func ParseEtcdMembers(list, status []byte) ([]EtcdMember, error) {
	var l struct {
		Members []struct {
			ID        uint64   `json:"ID,string"`
			Name      string   `json:"name"`
			PeerURLs  []string `json:"peerURLs"`
			IsLearner bool     `json:"isLearner"`
		} `json:"members"`
	}
	if err := json.Unmarshal(list, &l); err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	var st struct {
		Leader uint64 `json:"leader,string"`
	}
	if err := json.Unmarshal(status, &st); err != nil {
		return nil, fmt.Errorf("etcd endpoint status: %w", err)
	}
	leader := st.Leader
	out := make([]EtcdMember, 0, len(l.Members))
	for _, m := range l.Members {
		em := EtcdMember{ID: fmt.Sprintf("%x", m.ID), Name: m.Name, Learner: m.IsLearner, Leader: m.ID == leader && leader != 0}
		if len(m.PeerURLs) > 0 {
			em.PeerURL = m.PeerURLs[0]
		}
		out = append(out, em)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Name == "") != (out[j].Name == "") {
			return out[i].Name != ""
		}
		return out[i].Name+out[i].PeerURL < out[j].Name+out[j].PeerURL
	})
	return out, nil
}
