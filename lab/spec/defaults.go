package spec

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"path/filepath"
)

// profileSizes are the default sizes per profile and role.
var profileSizes = map[Profile]map[Role]Node{
	ProfileOpenShift: {
		RoleBootstrap: {VCPUs: 4, MemoryMiB: 16384, DiskGiB: 100},
		RoleMaster:    {VCPUs: 4, MemoryMiB: 16384, DiskGiB: 100},
		RoleWorker:    {VCPUs: 2, MemoryMiB: 8192, DiskGiB: 100},
	},
	ProfileProbe: {
		RoleBootstrap: {VCPUs: 1, MemoryMiB: 256, DiskGiB: 1},
		RoleMaster:    {VCPUs: 1, MemoryMiB: 256, DiskGiB: 1},
		RoleWorker:    {VCPUs: 1, MemoryMiB: 256, DiskGiB: 1},
	},
}

// MinMemoryMiB is the floor below which validation refuses a node: the
// documented minimum for OpenShift, what the probe agent needs for probe labs.
func MinMemoryMiB(p Profile, r Role) int {
	if p == ProfileProbe {
		return 192
	}
	if n, ok := profileSizes[p][r]; ok {
		return n.MemoryMiB
	}
	return 0
}

// DefaultSize returns the default vCPU, memory and disk of a role in a profile.
func DefaultSize(p Profile, r Role) Node { return profileSizes[p][r] }

// defaultSize fills n's zero vCPUs, memory and disk: the profile's, or
// a rehearsal lab's for its bootstrap and masters.
func (s *Spec) defaultSize(n *Node) {
	size := profileSizes[s.Profile][n.Role]
	if s.Rehearsal() {
		switch n.Role {
		case RoleBootstrap:
			size.MemoryMiB = RehearsalBootstrapMemoryMiB
		case RoleMaster:
			size.MemoryMiB = RehearsalMasterMemoryMiB
		}
	}
	if n.VCPUs == 0 {
		n.VCPUs = size.VCPUs
	}
	if n.MemoryMiB == 0 {
		n.MemoryMiB = size.MemoryMiB
	}
	if n.DiskGiB == 0 {
		n.DiskGiB = size.DiskGiB
	}
}

// MaxNodes is the most nodes a lab has: its machine network is one /24
// (gateway, load balancer and DHCP range included).
const MaxNodes = 250

// Defaults fills every zero field. It is idempotent and never overrides a
// value the user set.
func (s *Spec) Defaults() {
	s.defaultIdentity()
	prefix, perr := s.defaultNetwork()
	s.defaultPlaces()
	s.defaultOpenShift()
	s.defaultTopology()
	s.defaultNodeFields(prefix, perr == nil)
}

// defaultIdentity fills what names the lab and says what it is.
func (s *Spec) defaultIdentity() {
	if s.APIVersion == "" {
		s.APIVersion = APIVersion
	}
	if s.Kind == "" {
		s.Kind = Kind
	}
	if s.Name == "" {
		s.Name = "demo"
	}
	if s.Profile == "" {
		s.Profile = ProfileProbe
		if s.OpenShift.PullSecretFile != "" {
			s.Profile = ProfileOpenShift
		}
	}
	if s.Cluster.Name == "" {
		s.Cluster.Name = "ocp"
	}
	if s.Cluster.BaseDomain == "" {
		s.Cluster.BaseDomain = "lab.local"
	}
	if s.Libvirt.URI == "" {
		s.Libvirt.URI = "qemu:///system"
	}
	if s.Accelerator == "" {
		s.Accelerator = AccelAuto
	}
}

// defaultNetwork fills the network's fields and returns its prefix
// (masked), with the parse error of a CIDR Validate will name.
func (s *Spec) defaultNetwork() (netip.Prefix, error) {
	if s.Network.CIDR == "" {
		s.Network.CIDR = defaultMachineCIDR
	}
	if s.Network.Mode == "" {
		s.Network.Mode = NetworkNAT
		if s.Profile == ProfileProbe {
			s.Network.Mode = NetworkIsolated
		}
	}
	if s.Network.Bridge == "" {
		sum := sha256.Sum256([]byte(s.Name))
		s.Network.Bridge = fmt.Sprintf("bl%x", sum[:4]) // 10 chars, deterministic
	}
	prefix, perr := netip.ParsePrefix(s.Network.CIDR)
	if perr == nil {
		prefix = prefix.Masked()
		if s.Network.Gateway == "" {
			s.Network.Gateway = NthHost(prefix, 1)
		}
	}
	if s.Network.APIAddress == "" {
		s.Network.APIAddress = s.Network.Gateway
	}
	if s.Network.IngressAddress == "" {
		s.Network.IngressAddress = s.Network.APIAddress
	}
	return prefix, perr
}

// defaultPlaces fills the lab's directories and the stages' checkpoints.
func (s *Spec) defaultPlaces() {
	if s.Storage.PoolDir == "" {
		s.Storage.PoolDir = filepath.Join("/var/lib/libvirt/images", "bootlab-"+s.Name)
	}
	if s.LabDir == "" {
		s.LabDir = filepath.Join(DefaultHome(), "labs", s.Name)
	}
	s.CleanDirs()
	if s.Stages.Checkpoints == nil {
		on := true
		s.Stages.Checkpoints = &on
	}
}

// defaultOpenShift fills a real lab's release and networks. Probe labs
// render no install-config: their networks stay unset unless the user
// wrote them (then Validate checks them and warns).
func (s *Spec) defaultOpenShift() {
	if s.Profile != ProfileOpenShift {
		return
	}
	if s.OpenShift.Version == "" {
		s.OpenShift.Version = DefaultOpenShiftVersion
	}
	if len(s.OpenShift.ClusterNetwork) == 0 {
		s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: DefaultClusterNetworkCIDR, HostPrefix: DefaultClusterHostPrefix}}
	}
	if len(s.OpenShift.ServiceNetwork) == 0 {
		s.OpenShift.ServiceNetwork = []string{DefaultServiceNetworkCIDR}
	}
}

// defaultTopology makes the node list from the topology when there is
// none, and the topology from the node list always, so `lab config` is
// truthful (a negative count stays, for Validate to name).
func (s *Spec) defaultTopology() {
	if len(s.Nodes) == 0 && s.Topology.nodes() <= MaxNodes {
		if s.Topology.Masters == 0 && s.Topology.Workers == 0 && !s.mastersGiven {
			s.Topology = Topology{Masters: 3, Workers: 2}
		}
		s.Nodes = append(s.Nodes, Node{Name: "bootstrap", Role: RoleBootstrap})
		for i := 0; i < s.Topology.Masters; i++ {
			s.Nodes = append(s.Nodes, Node{Name: fmt.Sprintf("master-%d", i), Role: RoleMaster})
		}
		for i := 0; i < s.Topology.Workers; i++ {
			s.Nodes = append(s.Nodes, Node{Name: fmt.Sprintf("worker-%d", i), Role: RoleWorker})
		}
	}
	if len(s.Nodes) > 0 && s.Topology.Masters >= 0 && s.Topology.Workers >= 0 {
		s.Topology = Topology{Masters: len(s.NodesByRole(RoleMaster)), Workers: len(s.NodesByRole(RoleWorker))}
	}
}

// defaultNodeFields gives each node its size, MAC and address: bootstrap
// .10, masters .11.., workers .20.. of prefix (when it parsed), as the old
// libvirt platform did, skipping addresses already taken.
func (s *Spec) defaultNodeFields(prefix netip.Prefix, prefixOK bool) {
	used := map[string]bool{}
	for _, n := range s.Nodes {
		used[n.IP] = true
	}
	var next = map[Role]int{RoleBootstrap: 10, RoleMaster: 11, RoleWorker: 20}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		s.defaultSize(n)
		if n.MAC == "" {
			n.MAC = DeriveMAC(s.Name, n.Name)
		}
		if n.IP != "" || !prefixOK {
			continue
		}
		for {
			ip := NthHost(prefix, next[n.Role])
			next[n.Role]++
			if ip == "" || !used[ip] {
				n.IP = ip
				used[ip] = true
				break
			}
		}
	}
}

// DefaultOpenShiftVersion is the release used when openshift.version is unset.
const DefaultOpenShiftVersion = "4.19.10"

// DeriveMAC returns a stable locally administered MAC in QEMU's 52:54:00 range.
func DeriveMAC(lab, node string) string {
	sum := sha256.Sum256([]byte(lab + "/" + node))
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", sum[0], sum[1], sum[2])
}

// NthHost returns the n-th address of prefix, or "" when it falls outside
// or is the broadcast address.
func NthHost(p netip.Prefix, n int) string {
	a := p.Addr()
	for i := 0; i < n; i++ {
		a = a.Next()
	}
	if !a.IsValid() || !usableHost(p, a) {
		return ""
	}
	return a.String()
}
