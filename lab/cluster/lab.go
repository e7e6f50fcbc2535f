package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// LabNodes are the lab's masters and workers (the nodes that register;
// the bootstrap never does), for CSR review.
func LabNodes(s *spec.Spec) []LabNode {
	var out []LabNode
	for _, n := range s.Nodes {
		if n.Role == spec.RoleMaster || n.Role == spec.RoleWorker {
			out = append(out, LabNode{Name: n.Name, FQDN: s.FQDN(n), IP: n.IP})
		}
	}
	return out
}

// MasterNodes are the lab's masters.
func MasterNodes(s *spec.Spec) []LabNode {
	var out []LabNode
	for _, n := range s.NodesByRole(spec.RoleMaster) {
		out = append(out, LabNode{Name: n.Name, FQDN: s.FQDN(n), IP: n.IP})
	}
	return out
}

// Net is how the lab network is reached from here: directly (the zero
// value), or through the SSH connection of a remote hypervisor host, the
// only machine on a remote lab's network.
type Net struct {
	// Dial opens connections to lab addresses (nil: directly).
	Dial DialFunc
	// Via is the connection nodes are reached through over SSH (nil: directly).
	Via *sshc.Client
}

// LabClient is a client of the lab's API from <assets>/auth/kubeconfig,
// dialled through the load balancer's address (network.apiAddress) so it
// works before the host resolves the lab domain.
func LabClient(s *spec.Spec, n Net) (*Client, error) {
	k, err := LoadKubeconfig(filepath.Join(labdir.Assets(s), "auth", "kubeconfig"))
	if err != nil {
		return nil, err
	}
	return NewClient(k, s.Network.APIAddress, n.Dial)
}

// LabMCS is a client of the lab's MCS through the load balancer, trusting
// the root CA the installer put in master.ign.
func LabMCS(s *spec.Spec, n Net) (*MCS, error) {
	path := filepath.Join(labdir.Assets(s), "master.ign")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s for the MCS root CA: %w", path, err)
	}
	cfg, err := ignition.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cas := cfg.Ignition.Security.TLS.CertificateAuthorities
	if len(cas) == 0 || cas[0].Source == nil {
		return nil, fmt.Errorf("%s carries no certificate authority", path)
	}
	pem, err := ignition.DecodeDataURL(*cas[0].Source)
	if err != nil {
		return nil, fmt.Errorf("%s: certificate authority: %w", path, err)
	}
	return NewMCS(pem, s.Cluster.Domain(), s.Network.APIAddress, n.Dial)
}

// NodeSSH is how bootlab logs in to a node of lab s at host: as core with
// the lab's key, its host key trusted on first use and kept in the lab's
// own known_hosts (<labDir>/ssh/known_hosts: a rebuild changes it), through
// via, the hypervisor host of a remote lab (nil: directly). Every verb
// reaches a node this way: lab ssh and lab gather (lab's DialNode), the
// stage commands (lab.NodeSSH, with their flags on top) and the bootstrap
// watch of lab wait and lab kubeconfig (BootstrapSSH).
func NodeSSH(s *spec.Spec, host string, via *sshc.Client) node.SSHConfig {
	return node.SSHConfig{Host: host, Port: 22, User: "core", KeyPath: labdir.SSHKey(s),
		KnownHostsPath: labdir.KnownHosts(s), OwnKnownHosts: true, Via: via}
}

// BootstrapSSH runs commands on the lab's bootstrap node (NodeSSH) as
// core, without sudo: it watches what core may read.
func BootstrapSSH(s *spec.Spec, n Net) (*node.Redialing, error) {
	boots := s.NodesByRole(spec.RoleBootstrap)
	if len(boots) == 0 || boots[0].IP == "" {
		return nil, fmt.Errorf("the lab has no bootstrap node with an address")
	}
	cfg := NodeSSH(s, boots[0].IP, n.Via)
	cfg.AsUser = true
	return node.NewRedialing(cfg), nil
}

// RehearsalKubeconfigPath is a rehearsal lab's admin kubeconfig: on the
// bootstrap, among the installer's assets bootlab writes there (the host
// keeps no copy).
const RehearsalKubeconfigPath = "/opt/openshift/auth/kubeconfig"

// RehearsalClient is a client of a rehearsal lab's API with the admin
// kubeconfig read from the bootstrap over SSH, dialled through the load
// balancer's address.
func RehearsalClient(ctx context.Context, s *spec.Spec, n Net) (*Client, error) {
	ssh, err := BootstrapSSH(s, n)
	if err != nil {
		return nil, err
	}
	defer ssh.Close()
	k, err := nodeKubeconfig(ctx, ssh, RehearsalKubeconfigPath)
	if err != nil {
		return nil, err
	}
	return NewClient(k, s.Network.APIAddress, n.Dial)
}

// commandRunner is what reading a file from a node needs of it.
type commandRunner interface {
	Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	String() string
}

// nodeKubeconfig reads the kubeconfig at path on node r (as root).
func nodeKubeconfig(ctx context.Context, r commandRunner, path string) (*Kubeconfig, error) {
	var out, errb bytes.Buffer
	code, err := r.Run(ctx, "sudo -n cat "+path, nil, &out, &errb)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d: %s", code, strings.TrimSpace(errb.String()))
	}
	if err != nil {
		return nil, fmt.Errorf("read the admin kubeconfig %s from the bootstrap (%s): %w: a rehearsal lab keeps it there only, so this needs the bootstrap up (`bootlab lab status`)",
			path, r, err)
	}
	return ParseKubeconfig(r.String()+":"+path, out.Bytes(), "")
}
