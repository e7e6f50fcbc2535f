package wire

import (
	"sort"
	"strings"
)

// Paths of the files the probe Ignition configs lay down. The MCS cert and
// key sit where the real bootstrap MCS reads them.
const (
	ConfigPath       = "/etc/bootlab/probe.json"
	RootCAPath       = "/etc/bootlab/root-ca.crt"
	MCSCertPath      = "/etc/ssl/mcs/tls.crt"
	MCSKeyPath       = "/etc/ssl/mcs/tls.key"
	MasterConfigPath = "/etc/mcs/bootstrap/master.ign" // what the bootstrap MCS serves as /config/master
	WorkerConfigPath = "/etc/mcs/worker.ign"           // what masters serve as /config/worker
	// SSHHostKeyPath is the rehearsal bootstrap's SSH host key, where
	// RHCOS's sshd keeps it. It comes from the host (one per lab), so
	// known_hosts stays right across reboots of the node.
	SSHHostKeyPath = "/etc/ssh/ssh_host_ed25519_key"
)

// Roles, as the lab spec names them.
const (
	RoleBootstrap = "bootstrap"
	RoleMaster    = "master"
	RoleWorker    = "worker"
)

// NodeHeader names the node that answered (probe stand-ins only).
const NodeHeader = "X-Bootlab-Node"

// NodeExpect is what a node must find about itself.
type NodeExpect struct {
	Name string `json:"name"`
	FQDN string `json:"fqdn"`
	Role string `json:"role"`
	IP   string `json:"ip"`
	MAC  string `json:"mac"`
	// Ingress is set on the nodes the load balancer sends 80 and 443 to
	// (lab.Spec.IngressNodes): they serve the ingress stand-in, whatever
	// their role.
	Ingress bool `json:"ingress,omitempty"`
}

// NameExpect is a DNS name and the address it must resolve to. A Wildcard
// name is resolved with a random label in front (probe-x1y2.apps....).
type NameExpect struct {
	Name     string `json:"name"`
	Address  string `json:"address"`
	Wildcard bool   `json:"wildcard,omitempty"`
}

// Config is the probe's own configuration, carried at ConfigPath in the
// Ignition config a node ends up with. Masters and workers boot a pointer
// config, so their expectations travel in the config served to their pool:
// Nodes holds every node of that pool keyed by MAC, and each agent picks the
// entry of its own NIC's MAC.
type Config struct {
	ClusterDomain string                `json:"clusterDomain"`
	Nodes         map[string]NodeExpect `json:"nodes"`
	Resolve       []NameExpect          `json:"resolve"`
	// Rehearsal is set in the bootstrap's config of a rehearsal lab: the
	// agent serves SSH and starts nothing the stages start.
	Rehearsal bool `json:"rehearsal,omitempty"`
	// Etcd is set in the masters' config of a rehearsal lab: each master
	// joins the bootstrap's etcd member once it has its config and the
	// cluster's API answers (stage 13).
	Etcd *EtcdJoin `json:"etcd,omitempty"`
}

// EtcdJoin tells a rehearsal master where the bootstrap etcd member is
// and how many members the cluster ends with (the masters).
type EtcdJoin struct {
	BootstrapIP string `json:"bootstrapIP"`
	Masters     int    `json:"masters"`
}

// Where a rehearsal master finds its etcd certificates, signed by the
// lab's etcd-signer: the layout of the cluster-etcd-operator's
// etcd-all-certs secret and etcd-serving-ca config map on a master.
const (
	EtcdCertsDir    = "/etc/kubernetes/static-pod-resources/etcd-certs"
	EtcdAllCertsDir = EtcdCertsDir + "/secrets/etcd-all-certs"
	EtcdCABundle    = EtcdCertsDir + "/configmaps/etcd-serving-ca/ca-bundle.crt"
	EtcdClientCert  = EtcdCertsDir + "/secrets/etcd-client/tls.crt"
	EtcdClientKey   = EtcdCertsDir + "/secrets/etcd-client/tls.key"
)

// Self returns the expectations of the node with mac.
func (c Config) Self(mac string) (NodeExpect, bool) {
	n, ok := c.Nodes[strings.ToLower(mac)]
	return n, ok
}

// SortedNodes returns the nodes of c by name.
func (c Config) SortedNodes() []NodeExpect {
	out := make([]NodeExpect, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
