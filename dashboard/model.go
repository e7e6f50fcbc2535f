package dashboard

import (
	"time"

	"github.com/bootlab/bootlab/lab/spec"
	"github.com/bootlab/bootlab/stages"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
)

// Phases of the bootstrap timeline, in order.
const (
	PhaseNotBuilt         = "not built"
	PhaseBootstrapActive  = "bootstrap active"
	PhaseHandoff          = "handoff"
	PhaseBootstrapRemoved = "bootstrap removed"
)

// Phases is the bootstrap timeline the page draws.
var Phases = []string{PhaseBootstrapActive, PhaseHandoff, PhaseBootstrapRemoved}

// Stage states.
const (
	StagePending = string(stages.ProgressPending)
	StageRunning = string(stages.ProgressRunning)
	StageDone    = string(stages.ProgressDone)
	StageFailed  = string(stages.ProgressFailed)
	StageSkipped = string(stages.ProgressSkipped)
)

// Backend health colours.
const (
	HealthUp      = "up"
	HealthDown    = "down"
	HealthMaint   = "maint"
	HealthUnknown = "unknown"
	// HealthPending is a rehearsal lab's backend down as the stages leave
	// it (verify's pending): BackendView.Pending says why.
	HealthPending = "pending"
)

// LabView is everything the page shows of one lab (GET /api/labs/{name}).
type LabView struct {
	Name    string       `json:"name"`
	Profile spec.Profile `json:"profile,omitempty"`
	// Class is the class the lab belongs to ("" for none); Host names the
	// host it runs on (HostView.Name): the class view groups by it.
	Class      string `json:"class,omitempty"`
	Host       string `json:"host,omitempty"`
	URI        string `json:"uri,omitempty"`
	CIDR       string `json:"cidr,omitempty"`
	Domain     string `json:"domain,omitempty"`
	Orphaned   bool   `json:"orphaned,omitempty"`
	NodesUp    int    `json:"nodesUp"`
	NodesTotal int    `json:"nodesTotal"`
	// Phase is one of the Phase* constants.
	Phase        string      `json:"phase"`
	Network      NetworkView `json:"network"`
	LoadBalancer LBView      `json:"loadBalancer"`
	// Serving names who serves the API and the MCS now (haproxy's view).
	Serving ServingView `json:"serving"`
	// Cluster is the lab's Kubernetes through its real API, when the lab
	// has a kubeconfig (`bootlab lab kubeconfig`); nil otherwise.
	Cluster *ClusterView `json:"cluster,omitempty"`
	// Etcd is the etcd members per node of a rehearsal lab, from the
	// masters' console reports; nil until one lists them.
	Etcd   *EtcdView       `json:"etcd,omitempty"`
	Nodes  []NodeView      `json:"nodes"`
	DNS    []lab.DNSRecord `json:"dns"`
	Stages []StageView     `json:"stages"`
	// StageReached is the highest stage done (0: none), StageRunning the
	// one running now (0: none).
	StageReached int `json:"stageReached"`
	StageRunning int `json:"stageRunning,omitempty"`
	// Failures are short messages: failed stages, failed verify checks,
	// nodes not running, backends down. The class view sorts by them.
	Failures []string             `json:"failures"`
	Verify   *labdir.VerifyRecord `json:"verify,omitempty"`
	// Error says what could not be read (the lab is shown with what could).
	Error string `json:"error,omitempty"`
}

// NetworkView is the host side of the lab network.
type NetworkView struct {
	Name    string `json:"name"`
	Exists  bool   `json:"exists"`
	Active  bool   `json:"active"`
	Bridge  string `json:"bridge,omitempty"`
	Gateway string `json:"gateway,omitempty"`
}

// LBView is the lab's haproxy: its four frontends and each backend's health.
type LBView struct {
	Running   bool           `json:"running"`
	Address   string         `json:"address,omitempty"`
	Frontends []FrontendView `json:"frontends"`
	Error     string         `json:"error,omitempty"`
}

// FrontendView is one listener (6443, 22623, 80, 443) and its servers.
type FrontendView struct {
	Name     string        `json:"name"`
	Port     int           `json:"port"`
	Address  string        `json:"address"`
	Backends []BackendView `json:"backends"`
}

// BackendView is one server of a frontend with its health colour.
type BackendView struct {
	Server  string `json:"server"`
	Address string `json:"address"`
	// Status is haproxy's word (UP, DOWN 1/2, MAINT, ...); "" when unknown.
	Status string `json:"status,omitempty"`
	Health string `json:"health"`
	// Pending says why a backend down is expected (Health pending), in
	// verify's words: which stage it waits for, or `lab pivot`.
	Pending string `json:"pending,omitempty"`
}

// NodeView is one node.
type NodeView struct {
	Name string    `json:"name"`
	Role spec.Role `json:"role"`
	// State is running, shut off, absent or foreign (lab.NodeStatus).
	State string `json:"state"`
	IP    string `json:"ip,omitempty"`
	FQDN  string `json:"fqdn,omitempty"`
}

// StageView is one bootkube stage as the lab's stage records tell it.
type StageView struct {
	Number  int       `json:"number"`
	Slug    string    `json:"slug"`
	State   string    `json:"state"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time,omitzero"`
}
