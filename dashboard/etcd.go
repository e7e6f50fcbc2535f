package dashboard

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// Etcd member states, as etcdctl tells them.
const (
	EtcdLeader  = "leader"
	EtcdVoter   = "voter"
	EtcdLearner = "learner"
)

// EtcdView is the lab's etcd members as the freshest master report lists
// them: the host keeps no etcd client certificate, the masters' agents
// hold theirs and put the member list in their console reports, so the
// page goes 1 -> 4 -> 3 members as the stages do.
type EtcdView struct {
	Members []EtcdMemberView `json:"members"`
	// From is the node whose report it is, Endpoint the etcd it asked and
	// Time when (the node's clock).
	From     string    `json:"from,omitempty"`
	Endpoint string    `json:"endpoint,omitempty"`
	Time     time.Time `json:"time,omitzero"`
	// Error says why no member list could be read.
	Error string `json:"error,omitempty"`
}

// EtcdMemberView is one member and the node it runs on.
type EtcdMemberView struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Node is the lab node whose address the peer URL names ("" if none).
	Node    string `json:"node,omitempty"`
	PeerURL string `json:"peerURL"`
	// State is EtcdLeader, EtcdVoter or EtcdLearner.
	State string `json:"state"`
}

// etcd returns the lab's etcd view, read again once clusterEvery has
// passed; nil when no node reported a member list.
func (c *Collector) etcd(ctx context.Context, s *spec.Spec, hv hypervisor.Hypervisor) *EtcdView {
	c.mu.Lock()
	cached, ok := c.etcdViews[s.LabDir]
	c.mu.Unlock()
	if ok && time.Since(cached.read) < clusterEvery {
		return cached.view
	}
	var h host.Host = host.Local{}
	if s.Remote() {
		if hv == nil {
			return &EtcdView{Members: []EtcdMemberView{}, Error: "the console logs are on the hypervisor's host, which is unreachable"}
		}
		h = hv.Host()
	}
	v := readEtcd(ctx, h, s)
	c.mu.Lock()
	if c.etcdViews == nil {
		c.etcdViews = map[string]etcdCache{}
	}
	c.etcdViews[s.LabDir] = etcdCache{read: time.Now(), view: v}
	c.mu.Unlock()
	return v
}

type etcdCache struct {
	read time.Time
	view *EtcdView
}

// readEtcd takes the freshest member list of the masters' and the
// bootstrap's last console reports (one that answered over one that
// failed): a rehearsal bootstrap reports from stage 07 on, the masters
// once they have their config (stage 12).
func readEtcd(ctx context.Context, h host.Host, s *spec.Spec) *EtcdView {
	var best *wire.EtcdMembers
	from := ""
	for _, n := range s.Nodes {
		if n.Role != spec.RoleMaster && n.Role != spec.RoleBootstrap {
			continue
		}
		data, err := h.ReadFile(ctx, labdir.ConsoleLog(s, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &EtcdView{Members: []EtcdMemberView{}, Error: Sanitize(err.Error())}
		}
		rep, err := wire.ParseConsole(bytes.NewReader(data))
		if err != nil || rep == nil || rep.Etcd == nil {
			continue
		}
		if best == nil || fresher(rep.Etcd, best) {
			best, from = rep.Etcd, n.Name
		}
	}
	if best == nil {
		return nil
	}
	v := &EtcdView{Members: []EtcdMemberView{}, From: from, Endpoint: best.Endpoint, Time: best.Time, Error: Sanitize(best.Error)}
	for _, m := range best.Members {
		v.Members = append(v.Members, memberView(s, m))
	}
	return v
}

// fresher prefers a list that was read to an error, then the later one.
func fresher(a, b *wire.EtcdMembers) bool {
	if (a.Error == "") != (b.Error == "") {
		return a.Error == ""
	}
	return a.Time.After(b.Time)
}

// memberView names the node a member runs on: the node whose address its
// peer URL names, else the node it is named after.
func memberView(s *spec.Spec, m wire.EtcdMember) EtcdMemberView {
	mv := EtcdMemberView{ID: m.ID, Name: m.Name, PeerURL: m.PeerURL, State: EtcdVoter}
	switch {
	case m.Learner:
		mv.State = EtcdLearner
	case m.Leader:
		mv.State = EtcdLeader
	}
	for _, n := range s.Nodes {
		if (m.Host() != "" && n.IP == m.Host()) || (mv.Node == "" && n.Name == m.Name) {
			mv.Node = n.Name
		}
	}
	return mv
}
