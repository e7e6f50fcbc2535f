package spec

import (
	"os"
	"path"
	"path/filepath"
)

// Names of the libvirt objects and host files of a lab. Every libvirt
// object bootlab creates is named with the "bootlab-<lab>" prefix; domains
// also carry bootlab metadata.
func (s *Spec) NetworkName() string { return "bootlab-" + s.Name }

// PoolName is the lab's storage pool.
func (s *Spec) PoolName() string { return "bootlab-" + s.Name }

// DomainName is the libvirt domain of node n.
func (s *Spec) DomainName(n Node) string { return "bootlab-" + s.Name + "-" + n.Name }

// BaseVolumeName is the imported base image in the lab pool.
func (s *Spec) BaseVolumeName() string { return "base.qcow2" }

// VolumeName is node n's overlay.
func (s *Spec) VolumeName(n Node) string { return n.Name + ".qcow2" }

// IgnitionPath is where node n's Ignition (as passed through fw_cfg) lives.
func (s *Spec) IgnitionPath(n Node) string {
	return filepath.Join(s.LabDir, "ignition", n.Name+".ign")
}

// Remote is true when the hypervisor is another machine (qemu+ssh): what
// the VMs read and the load balancer then live there, reached through
// lab/host.
func (s *Spec) Remote() bool { return s.URIKind().Remote() }

// HostDir is the lab's directory on the hypervisor's machine (libvirt.hostDir):
// the lab directory itself when the hypervisor is local.
func (s *Spec) HostDir() string {
	switch {
	case s.Libvirt.HostDir != "":
		return s.Libvirt.HostDir
	case s.Remote():
		return path.Join("/var/lib/bootlab/labs", s.Name)
	}
	return s.LabDir
}

// ConsoleLogPath is node n's serial console log, on the hypervisor's
// machine (virtlogd writes it there).
func (s *Spec) ConsoleLogPath(n Node) string {
	return filepath.Join(s.HostDir(), "console", n.Name+".log")
}

// HAProxyConfigPath, HAProxyPIDPath and HAProxySocketPath belong to the
// lab's load balancer, which runs on the hypervisor's machine.
func (s *Spec) HAProxyConfigPath() string {
	return filepath.Join(s.HostDir(), "haproxy", "haproxy.cfg")
}
func (s *Spec) HAProxyPIDPath() string    { return filepath.Join(s.HostDir(), "haproxy", "haproxy.pid") }
func (s *Spec) HAProxySocketPath() string { return filepath.Join(s.HostDir(), "haproxy", "admin.sock") }

// SSHKeyPath is the lab's private key (ed25519, 0600); SSHKeyPath()+".pub" is its public half.
func (s *Spec) SSHKeyPath() string { return filepath.Join(s.LabDir, "ssh", "id_ed25519") }

// KnownHostsPath records the host keys of the lab's nodes (trusted on first
// use by every SSH client bootlab runs: internal/sshc, `lab ssh`).
func (s *Spec) KnownHostsPath() string { return filepath.Join(s.LabDir, "ssh", "known_hosts") }

// AssetsDir is where openshift-install runs (install-config, manifests, Ignition, auth).
func (s *Spec) AssetsDir() string { return filepath.Join(s.LabDir, "assets") }

// StageLogDir keeps `bootlab stage` records and output logs.
func (s *Spec) StageLogDir() string { return filepath.Join(s.LabDir, "stages") }

// HAProxyStatsPort is the haproxy stats endpoint port on the API address.
const HAProxyStatsPort = 9000

// DefaultHome is where labs live: $BOOTLAB_HOME, else /var/lib/bootlab for
// root (qemu must be able to traverse it, which /root forbids), else
// $XDG_DATA_HOME/bootlab.
func DefaultHome() string {
	if h := os.Getenv("BOOTLAB_HOME"); h != "" {
		return h
	}
	if os.Geteuid() == 0 {
		return "/var/lib/bootlab"
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "bootlab")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "bootlab")
	}
	return filepath.Join(home, ".local", "share", "bootlab")
}
