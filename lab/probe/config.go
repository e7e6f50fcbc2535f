package probe

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
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

// Input is what Generate needs from the lab spec.
type Input struct {
	ClusterDomain  string
	APIAddress     string
	IngressAddress string
	Nodes          []NodeExpect
	PKI            pki.Lab
	// Issuer issues the pairs and keys the configs carry beyond PKI's: a
	// lab's keeps them, so its configs come out the same every time; nil
	// makes new ones.
	Issuer *pki.Issuer
	// Rehearsal makes the bootstrap a rehearsal bootstrap. Its config then
	// carries the core user's SSH key (passwd.users, as the installer's
	// bootstrap.ign does) and the host key (SSHHostKeyPath, 0600).
	Rehearsal        bool
	SSHAuthorizedKey string // one authorized_keys line: the lab's public key
	SSHHostKeyPEM    []byte // an OpenSSH private key
	// Assets describe the cluster for the rehearsal bootstrap's
	// /opt/openshift (RehearsalAssets).
	Assets AssetInput
}

// Configs are the generated Ignition configs: Bootstrap is bootstrap.ign (a
// full config), Master and Worker the pointer configs, MasterServed and
// WorkerServed what the MCS stand-ins serve for those pools.
type Configs struct {
	Bootstrap, Master, Worker  []byte
	MasterServed, WorkerServed []byte
}

// ForRole returns the fw_cfg config of a node of role.
func (c Configs) ForRole(role string) ([]byte, error) {
	switch role {
	case RoleBootstrap:
		return c.Bootstrap, nil
	case RoleMaster:
		return c.Master, nil
	case RoleWorker:
		return c.Worker, nil
	}
	return nil, fmt.Errorf("no probe Ignition for role %q", role)
}

// Generate builds the probe lab's Ignition chain, the same shape as an
// installer's: bootstrap.ign carries the CA, the MCS serving cert and key and
// the config its MCS serves to masters; master.ign and worker.ign are
// pointer configs to https://api-int.<domain>:22623/config/<role> trusting
// the lab CA; the master config carries the worker config masters serve.
// Every config is validated.
func Generate(in Input) (*Configs, error) {
	if in.ClusterDomain == "" {
		return nil, fmt.Errorf("probe Ignition: cluster domain is empty")
	}
	g := &generator{in: in, resolve: []NameExpect{
		{Name: "api." + in.ClusterDomain, Address: in.APIAddress},
		{Name: "api-int." + in.ClusterDomain, Address: in.APIAddress},
		{Name: "apps." + in.ClusterDomain, Address: in.IngressAddress, Wildcard: true},
	}, tls: []ignition.File{
		{Path: RootCAPath, Mode: 0o644, Data: in.PKI.CA.CertPEM},
		{Path: MCSCertPath, Mode: 0o644, Data: in.PKI.MCS.CertPEM},
		{Path: MCSKeyPath, Mode: 0o600, Data: in.PKI.MCS.KeyPEM},
	}}
	var (
		out Configs
		err error
	)
	if out.WorkerServed, err = g.full(g.pool(RoleWorker), nil); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	var etcdSigner pki.Pair
	if out.MasterServed, etcdSigner, err = g.masterServed(out.WorkerServed); err != nil {
		return nil, err
	}
	if out.Bootstrap, err = g.bootstrap(out.MasterServed, etcdSigner); err != nil {
		return nil, err
	}
	for role, dst := range map[string]*[]byte{RoleMaster: &out.Master, RoleWorker: &out.Worker} {
		p := ignition.Pointer(ignition.MCSURL(in.ClusterDomain, role), in.PKI.CA.CertPEM)
		if *dst, err = ignition.Marshal(p); err != nil {
			return nil, fmt.Errorf("%s pointer config: %w", role, err)
		}
	}
	return &out, nil
}

// generator is one Generate: its input, the names every node resolves and
// the TLS files the bootstrap and the masters carry.
type generator struct {
	in      Input
	resolve []NameExpect
	tls     []ignition.File
}

// pool is the probe config of the nodes of role.
func (g *generator) pool(role string) Config {
	c := Config{ClusterDomain: g.in.ClusterDomain, Nodes: map[string]NodeExpect{}, Resolve: g.resolve}
	for _, n := range g.in.Nodes {
		if n.Role == role {
			c.Nodes[strings.ToLower(n.MAC)] = n
		}
	}
	return c
}

// full is a full Ignition config: probe config c, extra files and users.
func (g *generator) full(c Config, users []types.PasswdUser, extra ...ignition.File) ([]byte, error) {
	pc, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	files := append([]ignition.File{{Path: ConfigPath, Mode: 0o644, Data: pc}}, extra...)
	cfg := ignition.WithFiles(files)
	cfg.Passwd.Users = users
	return ignition.Marshal(cfg)
}

// masterServed is the config the bootstrap's MCS serves the masters: the
// TLS files and the worker config they serve on; in a rehearsal lab also
// their etcd join and certificates, signed by the etcd-signer it returns.
func (g *generator) masterServed(workerServed []byte) ([]byte, pki.Pair, error) {
	files := append(append([]ignition.File(nil), g.tls...), ignition.File{Path: WorkerConfigPath, Mode: 0o600, Data: workerServed})
	pool := g.pool(RoleMaster)
	var etcdSigner pki.Pair
	if g.in.Rehearsal {
		// The etcd-signer signs the bootstrap member's certificates (stage
		// 07's render) and the masters' (served with their config here,
		// where a real cluster's etcd operator puts them in etcd-all-certs).
		var err error
		if etcdSigner, err = g.in.Issuer.Intermediate(g.in.PKI.CA, "etcd-signer"); err != nil {
			return nil, pki.Pair{}, err
		}
		join, extra, err := rehearsalMaster(g.in, etcdSigner)
		if err != nil {
			return nil, pki.Pair{}, err
		}
		pool.Etcd = join
		files = append(files, extra...)
	}
	data, err := g.full(pool, nil, files...)
	if err != nil {
		return nil, pki.Pair{}, fmt.Errorf("master config: %w", err)
	}
	return data, etcdSigner, nil
}

// bootstrap is bootstrap.ign: the TLS files and the masters' served
// config; in a rehearsal lab also the SSH host key, user core with the
// lab's key, and the assets the stages start from.
func (g *generator) bootstrap(masterServed []byte, etcdSigner pki.Pair) ([]byte, error) {
	in := g.in
	files := append(append([]ignition.File(nil), g.tls...), ignition.File{Path: MasterConfigPath, Mode: 0o600, Data: masterServed})
	pool := g.pool(RoleBootstrap)
	var users []types.PasswdUser
	if in.Rehearsal {
		in.Assets.EtcdSigner = etcdSigner
		if in.SSHAuthorizedKey == "" || len(in.SSHHostKeyPEM) == 0 {
			return nil, fmt.Errorf("probe Ignition: a rehearsal bootstrap needs the lab's SSH public key and a host key")
		}
		pool.Rehearsal = true
		files = append(files, ignition.File{Path: SSHHostKeyPath, Mode: 0o600, Data: in.SSHHostKeyPEM})
		assets, err := RehearsalAssets(in, in.Assets)
		if err != nil {
			return nil, fmt.Errorf("rehearsal bootstrap assets: %w", err)
		}
		files = append(files, assets...)
		users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{types.SSHAuthorizedKey(strings.TrimSpace(in.SSHAuthorizedKey))}}}
	}
	data, err := g.full(pool, users, files...)
	if err != nil {
		return nil, fmt.Errorf("bootstrap config: %w", err)
	}
	return data, nil
}

// masterEtcd returns the masters' etcd join settings and their
// certificates signed by signer: per master a serving and a peer
// certificate naming its name, FQDN and IP (as etcd-all-certs holds them,
// etcd-serving-NAME and etcd-peer-NAME), the CA bundle, and the client
// certificate the etcd operator uses. One served config carries every
// master's keys (the MCS serves one config per pool): a lab-only shortcut.
// rehearsalMaster is what a rehearsal master's served config adds: where
// the bootstrap member is, the master's etcd certificates and its
// kubelet's bootstrap files.
func rehearsalMaster(in Input, etcdSigner pki.Pair) (*EtcdJoin, []ignition.File, error) {
	join, certs, err := masterEtcd(in, etcdSigner)
	if err != nil {
		return nil, nil, fmt.Errorf("master etcd certificates: %w", err)
	}
	kubelet, err := rehearsalMasterFiles(in, in.Assets)
	if err != nil {
		return nil, nil, fmt.Errorf("master kubelet bootstrap files: %w", err)
	}
	return join, append(certs, kubelet...), nil
}

func masterEtcd(in Input, signer pki.Pair) (*EtcdJoin, []ignition.File, error) {
	join := &EtcdJoin{}
	for _, n := range in.Nodes {
		switch n.Role {
		case RoleBootstrap:
			join.BootstrapIP = n.IP
		case RoleMaster:
			join.Masters++
		}
	}
	if join.BootstrapIP == "" {
		return nil, nil, fmt.Errorf("a rehearsal lab needs a bootstrap node")
	}
	bundle := append(append([]byte(nil), signer.CertPEM...), in.PKI.CA.CertPEM...)
	files := []ignition.File{{Path: EtcdCABundle, Mode: 0o644, Data: bundle}}
	client, err := in.Issuer.Client(signer, "etcd", []string{"etcd"})
	if err != nil {
		return nil, nil, err
	}
	files = append(files, ignition.File{Path: EtcdClientCert, Mode: 0o644, Data: client.CertPEM},
		ignition.File{Path: EtcdClientKey, Mode: 0o600, Data: client.KeyPEM})
	for _, n := range in.Nodes {
		if n.Role != RoleMaster {
			continue
		}
		names := []string{"localhost", n.Name, n.FQDN}
		ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
		if ip := net.ParseIP(n.IP); ip != nil {
			ips = append(ips, ip)
		}
		for _, kind := range []struct{ file, cn, org string }{
			{"etcd-serving-" + n.Name, "system:etcd-server:" + n.FQDN, "system:etcd-servers"},
			{"etcd-peer-" + n.Name, "system:etcd-peer:" + n.FQDN, "system:etcd-peers"},
		} {
			p, err := in.Issuer.Leaf(signer, kind.cn, []string{kind.org}, names, ips)
			if err != nil {
				return nil, nil, err
			}
			files = append(files, ignition.File{Path: EtcdAllCertsDir + "/" + kind.file + ".crt", Mode: 0o644, Data: p.CertPEM},
				ignition.File{Path: EtcdAllCertsDir + "/" + kind.file + ".key", Mode: 0o600, Data: p.KeyPEM})
		}
	}
	return join, files, nil
}

// ParseProbeConfig extracts the probe config from a (merged) Ignition config.
func ParseProbeConfig(cfg types.Config) (*Config, error) {
	data, ok, err := ignition.FileContents(cfg, ConfigPath)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the Ignition config has no %s: is this a bootlab probe lab config?", ConfigPath)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parse %s: %w", ConfigPath, err)
	}
	return &c, nil
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
