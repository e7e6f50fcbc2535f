package spec

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/userfile"
)

// FieldError is one problem with one field of the spec.
type FieldError struct {
	// Field is the spec path, e.g. "nodes[2].ip" or "network.cidr".
	Field string
	// Msg says what is wrong and what to do.
	Msg string
}

func (e FieldError) String() string { return e.Field + ": " + e.Msg }

// ValidationError lists every problem found in a spec before anything is created.
type ValidationError struct {
	Source string
	Errs   []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	src := e.Source
	if src == "" {
		src = "lab spec"
	}
	if len(e.Errs) == 1 {
		fmt.Fprintf(&b, "%s: %s", src, e.Errs[0])
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %d problems:", src, len(e.Errs))
	for i, fe := range e.Errs {
		if i == maxListedErrors {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Errs)-i)
			break
		}
		fmt.Fprintf(&b, "\n  - %s", fe)
	}
	return b.String()
}

// maxListedErrors caps the problems one message lists: past that a reader
// fixes the first ones and runs again.
const maxListedErrors = 20

var (
	labelRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	bridgeRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)
	macRE    = regexp.MustCompile(`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`)
	semverRE = regexp.MustCompile(`^4\.(\d+)(\.\d+)?(-[0-9a-z.]+)?$`)
)

// URISchemes are the libvirt URI schemes bootlab can drive.
var URISchemes = []string{"qemu", "qemu+ssh", "qemu+unix", "qemu+tcp", "qemu+tls", "test"}

type errs struct{ list []FieldError }

func (e *errs) add(field, format string, args ...any) {
	e.list = append(e.list, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err is the *ValidationError of the problems found, or nil.
func (e *errs) err() error {
	if len(e.list) == 0 {
		return nil
	}
	return &ValidationError{Errs: e.list}
}

// Validate checks the (defaulted) spec and returns a *ValidationError
// naming every bad field, or nil. It looks at the files the spec names (the
// images, the pull secret, the SSH public key: they must exist and hold
// what they should) but not at the host's networks or libvirt: that is
// preflight.ValidateHost's part, after connecting.
func (s *Spec) Validate() error {
	var e errs
	if s.APIVersion != APIVersion {
		e.add("apiVersion", "is %q; this bootlab reads %q", s.APIVersion, APIVersion)
	}
	if s.Kind != Kind {
		e.add("kind", "is %q; must be %q", s.Kind, Kind)
	}
	if len(s.Name) > 32 || !labelRE.MatchString(s.Name) {
		e.add("name", "%q is not a valid lab name: use 1-32 lowercase letters, digits and '-', starting and ending with a letter or digit", s.Name)
	}
	switch s.Profile {
	case ProfileOpenShift, ProfileProbe:
	default:
		e.add("profile", "unknown profile %q: use %q or %q", s.Profile, ProfileOpenShift, ProfileProbe)
	}
	if s.Topology.Masters < 0 {
		e.add("topology.masters", "%d: must be 1 or more", s.Topology.Masters)
	}
	if s.Topology.Workers < 0 {
		e.add("topology.workers", "%d: must be 0 or more (0: masters run the workloads)", s.Topology.Workers)
	}
	// Far too many nodes is one error, before a check a node: Defaults did
	// not make them (a typo such as 100000 must not take seconds and print
	// thousands of lines).
	if n := s.Topology.nodes(); len(s.Nodes) == 0 && n > MaxNodes {
		field, count := "topology.workers", s.Topology.Workers
		if s.Topology.Masters > s.Topology.Workers {
			field, count = "topology.masters", s.Topology.Masters
		}
		if count > MaxNodes {
			// One count alone is too many (and the sum may not fit an int).
			e.add(field, "%d: a lab holds at most %d nodes in all (one /24 machine network)", count, MaxNodes)
		} else {
			e.add(field, "%d nodes in all: a lab holds at most %d (one /24 machine network)", n, MaxNodes)
		}
		return e.err()
	}
	if len(s.Nodes) > MaxNodes {
		e.add("nodes", "%d nodes: a lab holds at most %d (one /24 machine network)", len(s.Nodes), MaxNodes)
		return e.err()
	}
	s.validateCluster(&e)
	s.validateURI(&e)
	prefix, ok := s.validateNetwork(&e)
	s.validateDirs(&e)
	switch s.Accelerator {
	case AccelAuto, AccelKVM, AccelTCG:
	default:
		e.add("accelerator", "unknown accelerator %q: use auto, kvm or tcg", s.Accelerator)
	}
	s.validateImage(&e)
	s.validateNodes(&e, prefix, ok)
	s.validateOpenShift(&e)
	s.validateOpenShiftNetworks(&e, prefix, ok)
	return e.err()
}

func (s *Spec) validateCluster(e *errs) {
	nameOK := len(s.Cluster.Name) <= maxClusterNameLen && labelRE.MatchString(s.Cluster.Name)
	switch {
	case !labelRE.MatchString(s.Cluster.Name):
		e.add("cluster.name", "%q is not a DNS label: use lowercase letters, digits and '-' (at most %d), starting and ending with a letter or digit", s.Cluster.Name, maxClusterNameLen)
	case !nameOK:
		e.add("cluster.name", "%q is %d characters: the installer allows at most %d (a DNS label's 63 less the 9 of the \\052.apps record)", s.Cluster.Name, len(s.Cluster.Name), maxClusterNameLen)
	}
	bd := s.Cluster.BaseDomain
	if bd == "" || len(bd) > 253 || strings.HasSuffix(bd, ".") {
		e.add("cluster.baseDomain", "%q is not a DNS domain: use labels separated by dots, no trailing dot, e.g. lab.local", bd)
		return
	}
	for _, l := range strings.Split(bd, ".") {
		if len(l) > 63 || !labelRE.MatchString(l) {
			e.add("cluster.baseDomain", "%q is not a DNS domain: label %q must be lowercase letters, digits and '-'", bd, l)
			return
		}
	}
	if d := s.Cluster.Domain(); nameOK && len(d) > maxDomainLen {
		e.add("cluster.baseDomain", "the cluster domain %s is %d characters: a DNS name has at most %d, so shorten cluster.name or cluster.baseDomain", d, len(d), maxDomainLen)
	}
}

// The installer's name limits (installer pkg/validate ClusterName and
// DomainName): a cluster name is a DNS label short enough that
// "\052.apps.<name>" still is one, and <name>.<baseDomain> is a DNS-1123
// subdomain.
const (
	maxClusterNameLen = 63 - 9
	maxDomainLen      = 253
)

func (s *Spec) validateURI(e *errs) {
	u, err := url.Parse(s.Libvirt.URI)
	if err != nil || u.Scheme == "" {
		e.add("libvirt.uri", "%q is not a libvirt URI: use e.g. qemu:///system or qemu+ssh://user@host/system", s.Libvirt.URI)
		return
	}
	if !slices.Contains(URISchemes, u.Scheme) {
		e.add("libvirt.uri", "unknown scheme %q in %q: use one of %s", u.Scheme, s.Libvirt.URI, strings.Join(URISchemes, ", "))
		return
	}
	if u.Scheme == "qemu+ssh" && u.Host == "" {
		e.add("libvirt.uri", "%q names no host: use qemu+ssh://user@host/system", s.Libvirt.URI)
	}
	if strings.HasPrefix(u.Scheme, "qemu") && u.Path != "/system" && u.Path != "/session" {
		e.add("libvirt.uri", "%q: the path must be /system or /session", s.Libvirt.URI)
	}
}

// maxPrefixBits is the smallest network bootlab accepts: the gateway, the
// nodes at .10 and up, and a DHCP range need a /27 at least. minPrefixBits
// is the largest: a lab network is one host bridge's LAN of at most
// MaxNodes nodes; a /8 would shadow routes the host needs.
const (
	maxPrefixBits = 27
	minPrefixBits = 16
)

// bridgeNameError says why Linux would refuse name as an interface name
// (dev_valid_name: 1-15 bytes, no '/', ':' or whitespace, not "." or
// ".."), or "". bootlab is stricter than the kernel: letters, digits,
// '_', '.' and '-' only, which every tool quoting the name handles.
func bridgeNameError(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "is empty"
	case len(name) > 15:
		return fmt.Sprintf("%q is %d bytes, more than 15", name, len(name))
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a name", name)
	case !bridgeRE.MatchString(name):
		return fmt.Sprintf("%q holds a character Linux or bootlab refuses", name)
	}
	return ""
}

// nodes is how many nodes the topology makes (with the bootstrap), or
// more than MaxNodes when either count is out of range: adding two huge
// counts must not wrap around to a small one.
func (t Topology) nodes() int {
	if t.Masters > MaxNodes || t.Workers > MaxNodes {
		return MaxNodes + 1
	}
	return t.Masters + t.Workers + 1
}

func (s *Spec) validateNetwork(e *errs) (netip.Prefix, bool) {
	n := s.Network
	switch n.Mode {
	case NetworkNAT, NetworkIsolated:
	default:
		e.add("network.mode", "unknown mode %q: use nat (real installs) or isolated (no traffic leaves the host)", n.Mode)
	}
	if msg := bridgeNameError(n.Bridge); msg != "" {
		e.add("network.bridge", "%s: Linux names a bridge with 1-15 letters, digits, '_', '.' or '-' (not \".\" or \"..\"), e.g. bootlab-lab1", msg)
	}
	prefix, err := netip.ParsePrefix(n.CIDR)
	if err != nil {
		e.add("network.cidr", "%q is not a CIDR: use e.g. 192.168.126.0/24", n.CIDR)
		return netip.Prefix{}, false
	}
	if !prefix.Addr().Is4() {
		e.add("network.cidr", "%q is not IPv4: bootlab labs are IPv4 only", n.CIDR)
		return netip.Prefix{}, false
	}
	if prefix.Masked() != prefix {
		e.add("network.cidr", "%q has host bits set: did you mean %s?", n.CIDR, prefix.Masked())
		return netip.Prefix{}, false
	}
	if prefix.Bits() < minPrefixBits {
		e.add("network.cidr", "%q is too large for a lab network: use a /%d to /%d (a lab holds at most %d nodes; a /24 such as 192.168.126.0/24 is plenty)", n.CIDR, minPrefixBits, maxPrefixBits, MaxNodes)
		return netip.Prefix{}, false
	}
	if prefix.Bits() > maxPrefixBits {
		e.add("network.cidr", "%q is too small: a lab needs at least a /%d (gateway, nodes from .10, DHCP range)", n.CIDR, maxPrefixBits)
		return netip.Prefix{}, false
	}
	if o, bad := s.ovnOverlap(prefix); bad && s.Profile == ProfileOpenShift {
		e.add("network.cidr", "%s overlaps OVN-Kubernetes' %s %s, which every OpenShift node uses internally: use a private range such as 192.168.126.0/24", n.CIDR, o.name, o.prefix)
	} else if !prefix.Addr().IsPrivate() {
		e.add("network.cidr", "%q is not a private range: use one inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16", n.CIDR)
	}
	checkAddr := func(field, val string) {
		a, err := netip.ParseAddr(val)
		switch {
		case err != nil:
			e.add(field, "%q is not an IPv4 address", val)
		case !usableHost(prefix, a):
			e.add(field, "%s is not a usable host address of network.cidr %s", val, prefix)
		}
	}
	checkAddr("network.gateway", n.Gateway)
	if n.APIAddress != n.Gateway {
		e.add("network.apiAddress", "%s must be the gateway %s: haproxy runs on the host, which owns only the bridge address", n.APIAddress, n.Gateway)
	}
	if n.IngressAddress != n.Gateway {
		e.add("network.ingressAddress", "%s must be the gateway %s: haproxy runs on the host, which owns only the bridge address", n.IngressAddress, n.Gateway)
	}
	return prefix, true
}

// regularFile checks that path is a regular file that can be opened,
// without reading it (images are large).
func regularFile(path string) error {
	f, _, err := userfile.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// usableHost says whether a is inside p and neither its network nor its broadcast address.
func usableHost(p netip.Prefix, a netip.Addr) bool {
	if !a.Is4() || !p.Contains(a) || a == p.Addr() {
		return false
	}
	b := p.Addr().As4()
	host := 32 - p.Bits()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= (1 << host) - 1
	bcast := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return a != bcast
}

func (s *Spec) validateImage(e *errs) {
	im := s.Image
	fileMust := func(field, path, what string) {
		if path == "" {
			return
		}
		if !filepath.IsAbs(path) {
			e.add(field, "%q must be an absolute path", path)
			return
		}
		if err := regularFile(path); err != nil {
			e.add(field, "%s %s", what, err)
		}
	}
	fileMust("image.path", im.Path, "base image")
	fileMust("image.kernel", im.Kernel, "kernel")
	fileMust("image.initrd", im.Initrd, "initrd")
	fileMust("image.rehearsalInitrd", im.RehearsalInitrd, "rehearsal initrd")
	fileMust("image.kubeVolume", im.KubeVolume, "Kubernetes volume")
	if (im.Kernel == "") != (im.Initrd == "") {
		e.add("image", "kernel and initrd go together for direct kernel boot: set both or neither")
	}
	if s.Profile == ProfileOpenShift && s.OpenShift.PullSecretFile == "" {
		// openshift-install writes install-config's pullSecret into every
		// node's config: a real lab cannot do without one, even with RHCOS at hand.
		e.add("openshift.pullSecretFile", "the openshift profile needs a pull secret (from console.redhat.com; --pull-secret FILE); for a lab without one use profile: probe")
	}
}

func (s *Spec) validateOpenShift(e *errs) {
	o := s.OpenShift
	if s.Profile != ProfileOpenShift {
		// A probe lab's stages replay the annotated scripts of this release.
		if o.Version != "" {
			checkOpenShiftVersion(e, o.Version)
		}
		return
	}
	checkOpenShiftVersion(e, o.Version)
	// The pull secret and SSH key are read (and checked) by
	// validateOpenShiftInputs; the tools need only be regular files.
	for field, path := range map[string]string{
		"openshift.installerPath": o.InstallerPath,
		"openshift.ocPath":        o.OCPath,
	} {
		if path == "" {
			continue
		}
		if err := regularFile(path); err != nil {
			e.add(field, "%s", err)
		}
	}
	for field, base := range map[string]string{"openshift.mirrors.clients": o.Mirrors.Clients, "openshift.mirrors.rhcos": o.Mirrors.RHCOS} {
		if base == "" {
			continue
		}
		if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
			e.add(field, "%q is not an http(s) or file URL", base)
		}
	}
	s.validateOpenShiftInputs(e)
}

// checkOpenShiftVersion names a version that is not an OpenShift 4 release
// bootlab supports.
func checkOpenShiftVersion(e *errs, v string) {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		e.add("openshift.version", "%q is not an OpenShift 4 version: use e.g. %s", v, DefaultOpenShiftVersion)
	} else if minor, _ := strconv.Atoi(m[1]); minor < 16 {
		e.add("openshift.version", "%s is older than 4.16, the oldest release bootlab supports (the libvirt and bootstrap details differ before it)", v)
	}
}
