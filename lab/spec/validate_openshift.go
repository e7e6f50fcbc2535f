package spec

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/bootlab/bootlab/internal/userfile"
)

// The checks below are the ones openshift-install runs on install-config for
// platform none (installer pkg/types/validation/installconfig.go), made here
// so that `lab config`, preflight and up refuse a spec before anything is
// downloaded or created, naming the spec field instead of the install-config one.

// ovnSubnet is an IPv4 range OVN-Kubernetes uses inside every node.
type ovnSubnet struct {
	name   string
	prefix netip.Prefix
}

// ovnInternalSubnets are OVN-Kubernetes' default internal IPv4 ranges in
// OpenShift 4.minor (cluster-network-operator pkg/network/ovn_kubernetes.go
// defaults, checked by the installer's validateNetworkNotOverlapDefaultOVNSubnets):
// the join subnet (gateway routers), the transit switch subnet (interconnect,
// 4.14+) and the masquerade subnet (host to service traffic), which new
// clusters get as 169.254.0.0/17 from 4.14 on and as 169.254.169.0/29 before.
func ovnInternalSubnets(minor int) []ovnSubnet {
	masq := "169.254.0.0/17"
	if minor < 14 {
		masq = "169.254.169.0/29"
	}
	return []ovnSubnet{
		{"join subnet", netip.MustParsePrefix("100.64.0.0/16")},
		{"transit switch subnet", netip.MustParsePrefix("100.88.0.0/16")},
		{"masquerade subnet", netip.MustParsePrefix(masq)},
	}
}

// openShiftMinor is the minor release of openshift.version (of the default
// release when unset or unreadable: Validate reports a bad version itself).
func (s *Spec) openShiftMinor() int {
	m := semverRE.FindStringSubmatch(s.OpenShift.Version)
	if m == nil {
		m = semverRE.FindStringSubmatch(DefaultOpenShiftVersion)
	}
	minor, _ := strconv.Atoi(m[1])
	return minor
}

// ovnOverlap returns the OVN-Kubernetes range p overlaps, if any.
func (s *Spec) ovnOverlap(p netip.Prefix) (ovnSubnet, bool) {
	for _, o := range ovnInternalSubnets(s.openShiftMinor()) {
		if o.prefix.Overlaps(p) {
			return o, true
		}
	}
	return ovnSubnet{}, false
}

// minServiceNetworkBits is the installer's limit: an IPv4 service network
// may be at most a /12 (installer pkg/validate ServiceSubnetCIDR).
const minServiceNetworkBits = 12

// maxHostPrefix leaves a node's pod subnet room for OVN-Kubernetes' own
// addresses (gateway, management port) and a few pods.
const maxHostPrefix = 28

// parseIPv4Block checks one CIDR of the cluster or service network.
func parseIPv4Block(e *errs, field, val, example string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(val)
	switch {
	case err != nil:
		e.add(field, "%q is not a CIDR: use e.g. %s", val, example)
	case !p.Addr().Is4():
		e.add(field, "%q is not IPv4: bootlab labs are IPv4 only", val)
	case p.Masked() != p:
		e.add(field, "%q has host bits set: did you mean %s?", val, p.Masked())
	default:
		return p, true
	}
	return netip.Prefix{}, false
}

// validateOpenShiftNetworks checks openshift.clusterNetwork and
// openshift.serviceNetwork against each other, the machine network (network.cidr)
// and OVN-Kubernetes' internal ranges, and the pod network's size against the
// nodes. Probe labs check them only when set (Warnings says they are ignored).
// block is a network the lab's OpenShift networks name, and the field
// that names it.
type block struct {
	field  string
	prefix netip.Prefix
}

// validateServiceNetwork checks openshift.serviceNetwork: one IPv4 block,
// no larger than the installer allows, apart from the pod networks, the
// machine network (machineOverlap) and OVN-Kubernetes' ranges (ovn).
func (s *Spec) validateServiceNetwork(e *errs, pods []block, machineOverlap func(block, string), ovn func(block)) {
	o := s.OpenShift
	if len(o.ServiceNetwork) > 1 {
		e.add("openshift.serviceNetwork", "lists %d networks: an IPv4 cluster takes exactly one (e.g. %s)", len(o.ServiceNetwork), DefaultServiceNetworkCIDR)
	}
	for i, sn := range o.ServiceNetwork {
		f := fmt.Sprintf("openshift.serviceNetwork[%d]", i)
		p, ok := parseIPv4Block(e, f, sn, DefaultServiceNetworkCIDR)
		if !ok {
			continue
		}
		if p.Bits() < minServiceNetworkBits {
			e.add(f, "%s is larger than a /%d, the installer's limit for the service network: use e.g. %s", p, minServiceNetworkBits, DefaultServiceNetworkCIDR)
		}
		b := block{f, p}
		for _, pod := range pods {
			if pod.prefix.Overlaps(p) {
				e.add(f, "%s overlaps %s %s, the pod network: service and pod networks must not overlap", p, pod.field, pod.prefix)
			}
		}
		machineOverlap(b, "the service network")
		ovn(b)
	}
}

func (s *Spec) validateOpenShiftNetworks(e *errs, machine netip.Prefix, machineOK bool) {
	o := s.OpenShift
	if s.Profile != ProfileOpenShift && len(o.ClusterNetwork) == 0 && len(o.ServiceNetwork) == 0 {
		return
	}
	machineOverlap := func(b block, what string) {
		if !machineOK || !b.prefix.Overlaps(machine) {
			return
		}
		hint := ""
		if def := netip.MustParsePrefix(defaultMachineCIDR); !def.Overlaps(b.prefix) {
			hint = " (the default " + defaultMachineCIDR + " is)"
		}
		e.add("network.cidr", "%s overlaps %s %s, %s: choose a machine network outside it%s, or move %s", machine, b.field, b.prefix, what, hint, b.field)
	}
	ovn := func(b block) {
		if r, bad := s.ovnOverlap(b.prefix); bad {
			e.add(b.field, "%s overlaps OVN-Kubernetes' %s %s, which every node uses internally: choose another range", b.prefix, r.name, r.prefix)
		}
	}

	var pods []block
	capacity, allOK := 0, true
	for i, cn := range o.ClusterNetwork {
		f := fmt.Sprintf("openshift.clusterNetwork[%d]", i)
		p, ok := parseIPv4Block(e, f+".cidr", cn.CIDR, DefaultClusterNetworkCIDR)
		if !ok {
			allOK = false
			continue
		}
		b := block{f, p}
		if n, ok := checkHostPrefix(e, f+".hostPrefix", cn.HostPrefix, p); !ok {
			allOK = false
		} else if n >= 20 || capacity+(1<<n) > 1<<20 {
			capacity = 1 << 20 // plenty: no lab has that many nodes
		} else {
			capacity += 1 << n
		}
		for _, prev := range pods {
			if prev.prefix.Overlaps(p) {
				e.add(f+".cidr", "%s overlaps %s %s: pod network blocks must not overlap", p, prev.field, prev.prefix)
			}
		}
		machineOverlap(b, "the pod network")
		ovn(b)
		pods = append(pods, b)
	}

	s.validateServiceNetwork(e, pods, machineOverlap, ovn)

	if s.Profile == ProfileOpenShift && allOK && len(pods) > 0 {
		masters, workers := len(s.NodesByRole(RoleMaster)), len(s.NodesByRole(RoleWorker))
		if nodes := masters + workers; capacity < nodes {
			e.add("openshift.clusterNetwork", "has room for %d node pod subnet(s), fewer than the %d nodes that run pods (%d masters, %d workers; the bootstrap node runs none): use a larger block or a longer hostPrefix", capacity, nodes, masters, workers)
		}
	}
}

// validateOpenShiftInputs checks what the files of an openshift lab hold:
// the pull secret's shape and the SSH key's type, as openshift-install
// checks install-config pullSecret and sshKey. Missing files are reported
// by validateOpenShift.
func (s *Spec) validateOpenShiftInputs(e *errs) {
	o := s.OpenShift
	if o.PullSecretFile != "" {
		data, err := userfile.Read(o.PullSecretFile, userfile.MaxTextBytes)
		if err != nil {
			e.add("openshift.pullSecretFile", "%s", err)
		} else if _, err := CheckPullSecret(data); err != nil {
			e.add("openshift.pullSecretFile", "%s: %s; %s", o.PullSecretFile, err, PullSecretHelp)
		}
	}
	if o.SSHPublicKeyFile != "" {
		data, err := userfile.Read(o.SSHPublicKeyFile, userfile.MaxTextBytes)
		if err != nil {
			e.add("openshift.sshPublicKeyFile", "%s", err)
		} else if err := CheckSSHPublicKey(string(data)); err != nil {
			e.add("openshift.sshPublicKeyFile", "%s: %s", o.SSHPublicKeyFile, err)
		}
	}
}

// mastersError says why an openshift lab cannot have n masters, or "".
func mastersError(n int) string {
	switch {
	case n == 1:
		return "1 master: a one-node control plane is single-node OpenShift, which installs by bootstrap-in-place (the node bootstraps itself, no bootstrap node), and bootlab builds only the bootstrap-node UPI flow: use 3 masters"
	case n == 2:
		return "2 masters: etcd needs 3 members to survive the loss of one, and two-node control planes (arbiter, fencing) are not a platform-none UPI topology: use 3 masters"
	case n > 5:
		return fmt.Sprintf("%d masters: an OpenShift control plane has 3 to 5 nodes (etcd members): use 3", n)
	}
	return ""
}

// Warnings returns what a valid spec may get wrong without being refused,
// each naming its field; the commands print them before they act.
func (s *Spec) Warnings() []FieldError {
	var w []FieldError
	add := func(field, format string, args ...any) {
		w = append(w, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	switch s.Profile {
	case ProfileOpenShift:
		if len(s.NodesByRole(RoleWorker)) == 1 {
			add("topology.workers", "1 worker: the default IngressController runs 2 router replicas, one per node and only on workers (the masters are not schedulable once there is a worker), so one router stays Pending and the ingress operator reports Degraded: use 2 workers, or 0 (the routers then run on the masters)")
		}
	case ProfileProbe:
		// A rehearsal lab renders an install-config and runs a real
		// control plane: both networks reach its pods. A plain probe lab
		// renders none.
		if len(s.OpenShift.ClusterNetwork) > 0 && !s.Rehearsal() {
			add("openshift.clusterNetwork", "the probe profile without manualBootstrap (no rehearsal) renders no install-config and ignores it (it is still checked, so the spec works with profile: openshift or as a rehearsal lab)")
		}
		if len(s.OpenShift.ServiceNetwork) > 0 && !s.Rehearsal() {
			add("openshift.serviceNetwork", "the probe profile without manualBootstrap (no rehearsal) renders no install-config and ignores it (it is still checked, so the spec works with profile: openshift or as a rehearsal lab)")
		}
		o := s.OpenShift
		for _, f := range []struct {
			field string
			set   bool
		}{
			{"openshift.sshPublicKeyFile", o.SSHPublicKeyFile != ""},
			{"openshift.installerPath", o.InstallerPath != ""},
			{"openshift.ocPath", o.OCPath != ""},
			{"openshift.mirrors", o.Mirrors != (Mirrors{})},
		} {
			if f.set {
				add(f.field, "the probe profile downloads and runs no OpenShift tools and ignores it")
			}
		}
	}
	return w
}

// checkHostPrefix checks a cluster network block's per-node prefix length
// and returns how many bits of node subnets the block holds.
func checkHostPrefix(e *errs, field string, hostPrefix int, p netip.Prefix) (int, bool) {
	switch {
	case hostPrefix == 0:
		e.add(field, "is missing: set the prefix length of each node's pod subnet (the installer's default is %d)", DefaultClusterHostPrefix)
	case hostPrefix < p.Bits():
		e.add(field, "%d is shorter than the block's /%d: each node's pod subnet must fit inside %s", hostPrefix, p.Bits(), p)
	case hostPrefix > 32:
		e.add(field, "%d is not a prefix length: an IPv4 prefix is at most 32; use at most %d (the installer's default is %d)", hostPrefix, maxHostPrefix, DefaultClusterHostPrefix)
	case hostPrefix > maxHostPrefix:
		e.add(field, "%d leaves a node %d pod addresses, some of which OVN-Kubernetes takes for itself: use at most %d (the installer's default is %d)", hostPrefix, 1<<(32-hostPrefix), maxHostPrefix, DefaultClusterHostPrefix)
	default:
		return hostPrefix - p.Bits(), true
	}
	return 0, false
}
