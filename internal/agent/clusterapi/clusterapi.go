package clusterapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/agent/endpoints"
	"github.com/bootlab/bootlab/internal/agent/standin"
	"github.com/bootlab/bootlab/internal/wire"
)

const (
	clusterVersionPath = "/apis/config.openshift.io/v1/clusterversions/version"
	etcdOperatorPath   = "/apis/operator.openshift.io/v1/etcds/cluster"
	// standInHeader marks answers of the bootlab API stand-in.
	standInHeader = "X-Bootlab-Stand-In"
)

// API is the masters' API stand-in of a rehearsal lab.
type API struct {
	node    string
	health  http.Handler
	members func(context.Context) ([]standin.Member, error)

	mu sync.Mutex
	cv map[string]any
}

// New returns the API stand-in of master node, which reads the etcd
// members with members.
func New(node string, members func(context.Context) ([]standin.Member, error)) *API {
	return &API{node: node, health: endpoints.APIStandIn(node), members: members,
		cv: map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
			"metadata": map[string]any{"name": "version"}, "spec": map[string]any{}}}
}

func (c *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(wire.NodeHeader, c.node)
	switch r.URL.Path {
	case clusterVersionPath:
		c.clusterVersion(w, r)
	case etcdOperatorPath:
		c.etcdOperator(w, r)
	default:
		c.health.ServeHTTP(w, r)
	}
}

func (c *API) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(standInHeader, "bootlab API stand-in on "+c.node)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func status(code int, msg string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Failure", "message": msg, "code": code}
}

func (c *API) clusterVersion(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		c.writeJSON(w, 200, c.cv)
	case http.MethodPatch:
		if ct := r.Header.Get("Content-Type"); ct != "application/merge-patch+json" {
			c.writeJSON(w, http.StatusUnsupportedMediaType, status(415, "the bootlab API stand-in plays merge patches only (--type=merge), not "+ct))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var patch map[string]any
		if err == nil {
			err = json.Unmarshal(body, &patch)
		}
		if err != nil {
			c.writeJSON(w, 400, status(400, "the patch is not a JSON object: "+err.Error()))
			return
		}
		c.cv = mergePatch(c.cv, patch).(map[string]any)
		c.writeJSON(w, 200, c.cv)
	default:
		c.writeJSON(w, 405, status(405, "GET or PATCH"))
	}
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	out := map[string]any{}
	for k, v := range d {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}

// etcdOperator answers the Etcd operator resource with the conditions the
// bootstrap teardown controller sets, read from the real member list.
func (c *API) etcdOperator(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		c.writeJSON(w, 405, status(405, "GET only"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	ms, err := c.members(ctx)
	if err != nil {
		c.writeJSON(w, 503, status(503, "etcd on "+c.node+": "+err.Error()))
		return
	}
	c.writeJSON(w, 200, etcdOperatorObject(ms))
}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func etcdOperatorObject(ms []standin.Member) map[string]any {
	removed := condition{Type: "EtcdBootstrapMemberRemoved", Status: "True", Reason: "BootstrapMemberRemoved",
		Message: "etcd bootstrap member is removed; members " + standin.MemberSummary(ms)}
	for _, m := range ms {
		if m.Name == standin.BootstrapMemberName {
			removed = condition{Type: "EtcdBootstrapMemberRemoved", Status: "False", Reason: "BootstrapMemberPresent",
				Message: "still waiting for the bootstrap teardown; members " + standin.MemberSummary(ms)}
		}
	}
	return map[string]any{"apiVersion": "operator.openshift.io/v1", "kind": "Etcd",
		"metadata": map[string]any{"name": "cluster"},
		"spec":     map[string]any{"managementState": "Managed"},
		"status":   map[string]any{"conditions": []condition{removed}}}
}
