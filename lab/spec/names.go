package spec

import (
	"os"
	"path/filepath"
)

// Names of the libvirt objects and host files of a lab. Every libvirt
// object bootlab creates is named with the "bootlab-<lab>" prefix; domains
// also carry bootlab metadata.
func (s *Spec) NetworkName() string { return "bootlab-" + s.Name }

// PoolName is the lab's storage pool.
func (s *Spec) PoolName() string { return "bootlab-" + s.Name }

// DomainName is the libvirt domain of node n.
func (s *Spec) DomainName(n Node) string { return s.DomainPrefix() + n.Name }

// DomainPrefix starts the name of every domain of the lab; the node's
// name follows it.
func (s *Spec) DomainPrefix() string { return "bootlab-" + s.Name + "-" }

// BaseVolumeName is the imported base image in the lab pool.
func (s *Spec) BaseVolumeName() string { return "base.qcow2" }

// VolumeName is node n's overlay.
func (s *Spec) VolumeName(n Node) string { return n.Name + ".qcow2" }

// Remote is true when the hypervisor is another machine (qemu+ssh): what
// the VMs read and the load balancer then live there, reached through
// lab/host.
func (s *Spec) Remote() bool { return s.URIKind().Remote() }

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
