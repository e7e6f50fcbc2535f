package probe

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
)

// Input is what Generate needs from the lab spec.
type Input struct {
	ClusterDomain  string
	APIAddress     string
	IngressAddress string
	Nodes          []wire.NodeExpect
	PKI            pki.Lab
	// Issuer issues the pairs and keys the configs carry beyond PKI's: a
	// lab's keeps them, so its configs come out the same every time; nil
	// makes new ones.
	Issuer *pki.Issuer
	// Rehearsal makes the bootstrap a rehearsal bootstrap. Its config then
	// carries the core user's SSH key (passwd.users, as the installer's
	// bootstrap.ign does) and the host key (wire.SSHHostKeyPath, 0600).
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
	case wire.RoleBootstrap:
		return c.Bootstrap, nil
	case wire.RoleMaster:
		return c.Master, nil
	case wire.RoleWorker:
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
	g := &generator{in: in, resolve: []wire.NameExpect{
		{Name: "api." + in.ClusterDomain, Address: in.APIAddress},
		{Name: "api-int." + in.ClusterDomain, Address: in.APIAddress},
		{Name: "apps." + in.ClusterDomain, Address: in.IngressAddress, Wildcard: true},
	}, tls: []ignition.File{
		{Path: wire.RootCAPath, Mode: 0o644, Data: in.PKI.CA.CertPEM},
		{Path: wire.MCSCertPath, Mode: 0o644, Data: in.PKI.MCS.CertPEM},
		{Path: wire.MCSKeyPath, Mode: 0o600, Data: in.PKI.MCS.KeyPEM},
	}}
	var (
		out Configs
		err error
	)
	if out.WorkerServed, err = g.full(g.pool(wire.RoleWorker), nil); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	var etcdSigner pki.Pair
	if out.MasterServed, etcdSigner, err = g.masterServed(out.WorkerServed); err != nil {
		return nil, err
	}
	if out.Bootstrap, err = g.bootstrap(out.MasterServed, etcdSigner); err != nil {
		return nil, err
	}
	for role, dst := range map[string]*[]byte{wire.RoleMaster: &out.Master, wire.RoleWorker: &out.Worker} {
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
	resolve []wire.NameExpect
	tls     []ignition.File
}

// pool is the probe config of the nodes of role.
func (g *generator) pool(role string) wire.Config {
	c := wire.Config{ClusterDomain: g.in.ClusterDomain, Nodes: map[string]wire.NodeExpect{}, Resolve: g.resolve}
	for _, n := range g.in.Nodes {
		if n.Role == role {
			c.Nodes[strings.ToLower(n.MAC)] = n
		}
	}
	return c
}

// full is a full Ignition config: probe config c, extra files and users.
func (g *generator) full(c wire.Config, users []types.PasswdUser, extra ...ignition.File) ([]byte, error) {
	pc, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	files := append([]ignition.File{{Path: wire.ConfigPath, Mode: 0o644, Data: pc}}, extra...)
	cfg := ignition.WithFiles(files)
	cfg.Passwd.Users = users
	return ignition.Marshal(cfg)
}

// masterServed is the config the bootstrap's MCS serves the masters: the
// TLS files and the worker config they serve on; in a rehearsal lab also
// their etcd join and certificates, signed by the etcd-signer it returns.
func (g *generator) masterServed(workerServed []byte) ([]byte, pki.Pair, error) {
	files := append(append([]ignition.File(nil), g.tls...), ignition.File{Path: wire.WorkerConfigPath, Mode: 0o600, Data: workerServed})
	pool := g.pool(wire.RoleMaster)
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
	files := append(append([]ignition.File(nil), g.tls...), ignition.File{Path: wire.MasterConfigPath, Mode: 0o600, Data: masterServed})
	pool := g.pool(wire.RoleBootstrap)
	var users []types.PasswdUser
	if in.Rehearsal {
		in.Assets.EtcdSigner = etcdSigner
		if in.SSHAuthorizedKey == "" || len(in.SSHHostKeyPEM) == 0 {
			return nil, fmt.Errorf("probe Ignition: a rehearsal bootstrap needs the lab's SSH public key and a host key")
		}
		pool.Rehearsal = true
		files = append(files, ignition.File{Path: wire.SSHHostKeyPath, Mode: 0o600, Data: in.SSHHostKeyPEM})
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
func rehearsalMaster(in Input, etcdSigner pki.Pair) (*wire.EtcdJoin, []ignition.File, error) {
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

func masterEtcd(in Input, signer pki.Pair) (*wire.EtcdJoin, []ignition.File, error) {
	join := &wire.EtcdJoin{}
	for _, n := range in.Nodes {
		switch n.Role {
		case wire.RoleBootstrap:
			join.BootstrapIP = n.IP
		case wire.RoleMaster:
			join.Masters++
		}
	}
	if join.BootstrapIP == "" {
		return nil, nil, fmt.Errorf("a rehearsal lab needs a bootstrap node")
	}
	bundle := append(append([]byte(nil), signer.CertPEM...), in.PKI.CA.CertPEM...)
	files := []ignition.File{{Path: wire.EtcdCABundle, Mode: 0o644, Data: bundle}}
	client, err := in.Issuer.Client(signer, "etcd", []string{"etcd"})
	if err != nil {
		return nil, nil, err
	}
	files = append(files, ignition.File{Path: wire.EtcdClientCert, Mode: 0o644, Data: client.CertPEM},
		ignition.File{Path: wire.EtcdClientKey, Mode: 0o600, Data: client.KeyPEM})
	for _, n := range in.Nodes {
		if n.Role != wire.RoleMaster {
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
			files = append(files, ignition.File{Path: wire.EtcdAllCertsDir + "/" + kind.file + ".crt", Mode: 0o644, Data: p.CertPEM},
				ignition.File{Path: wire.EtcdAllCertsDir + "/" + kind.file + ".key", Mode: 0o600, Data: p.KeyPEM})
		}
	}
	return join, files, nil
}
