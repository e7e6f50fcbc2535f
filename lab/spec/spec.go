package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"
)

// APIVersion and Kind head every lab spec file.
const (
	APIVersion = "bootlab.dev/v1alpha1"
	Kind       = "Lab"
)

// Profile selects sizing defaults and what the VMs boot.
type Profile string

const (
	// ProfileOpenShift sizes nodes to the documented OpenShift minimums and
	// boots RHCOS (or the qcow2 image given).
	ProfileOpenShift Profile = "openshift"
	// ProfileProbe boots bootlab's tiny probe image: same network, DNS, load
	// balancer and Ignition chain, seconds instead of an hour.
	ProfileProbe Profile = "probe"
)

// Role is a node's part in the cluster.
type Role string

const (
	RoleBootstrap Role = "bootstrap"
	RoleMaster    Role = "master"
	RoleWorker    Role = "worker"
)

// NetworkMode is the libvirt forward mode of the lab network.
type NetworkMode string

const (
	// NetworkNAT lets nodes reach the internet (real installs pull images).
	NetworkNAT NetworkMode = "nat"
	// NetworkIsolated has no <forward>: nothing leaves the host (tests, probe labs).
	NetworkIsolated NetworkMode = "isolated"
)

// Accelerator chooses the libvirt domain type.
type Accelerator string

const (
	AccelAuto Accelerator = "auto"
	AccelKVM  Accelerator = "kvm"
	AccelTCG  Accelerator = "tcg"
)

// Spec describes one lab. Zero fields are filled by Defaults.
type Spec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name names the lab and prefixes every libvirt object it owns.
	Name    string  `json:"name"`
	Profile Profile `json:"profile"`

	Cluster     Cluster     `json:"cluster"`
	Libvirt     Libvirt     `json:"libvirt"`
	Network     Network     `json:"network"`
	Storage     Storage     `json:"storage"`
	Accelerator Accelerator `json:"accelerator"`
	Image       Image       `json:"image"`

	// Topology derives Nodes when the node list is empty.
	Topology Topology `json:"topology"`
	Nodes    []Node   `json:"nodes"`

	OpenShift OpenShift `json:"openshift"`

	// Stages tunes `bootlab stage` on this lab.
	Stages StageSettings `json:"stages"`

	// mastersGiven is set when the spec file writes topology.masters: an
	// explicit 0 is refused by Validate, not replaced by the default 3.
	mastersGiven bool

	// LabDir holds every host file of the lab (haproxy config and pid,
	// Ignition, console logs, installer assets, stage logs, SSH key).
	LabDir string `json:"labDir"`
}

// Cluster is the OpenShift cluster identity: names are <node>.<name>.<baseDomain>.
type Cluster struct {
	Name       string `json:"name"`
	BaseDomain string `json:"baseDomain"`
}

// Domain returns <name>.<baseDomain>.
func (c Cluster) Domain() string { return c.Name + "." + c.BaseDomain }

// Libvirt says where the hypervisor is.
type Libvirt struct {
	// URI is a libvirt connection URI: qemu:///system, qemu+ssh://host/system,
	// or test:///default (in-memory test driver, no VMs run).
	URI string `json:"uri"`
	// HostDir is the lab's directory on the hypervisor's machine: console
	// logs and the load balancer live there. Default: labDir for a local
	// URI, /var/lib/bootlab/labs/<name> for a remote one (qemu+ssh).
	HostDir string `json:"hostDir,omitempty"`
}

// Network is the lab's libvirt network and the addresses on it.
type Network struct {
	// CIDR is the machine network (install-config machineNetwork).
	CIDR string      `json:"cidr"`
	Mode NetworkMode `json:"mode"`
	// Bridge is the host bridge name (at most 15 characters).
	Bridge string `json:"bridge"`
	// Gateway is the host's address on the bridge; dnsmasq serves DNS and
	// DHCP there. Defaults to the first host address of CIDR.
	Gateway string `json:"gateway"`
	// APIAddress is where haproxy listens for 6443 and 22623 and what api and
	// api-int resolve to. Defaults to Gateway.
	APIAddress string `json:"apiAddress"`
	// IngressAddress is where haproxy listens for 80 and 443 and what
	// *.apps resolves to. Defaults to APIAddress.
	IngressAddress string `json:"ingressAddress"`
}

// Storage is the lab's libvirt storage pool.
type Storage struct {
	// PoolDir is the directory of the lab's dir-type storage pool.
	PoolDir string `json:"poolDir"`
}

// Image is what the nodes boot: a qcow2 disk image (RHCOS or any cloud
// image) used as the backing store of each node's overlay, and/or a kernel
// and initrd for direct kernel boot (the probe image).
type Image struct {
	// Path is a local qcow2 (or raw) base image. For the openshift profile it
	// is RHCOS; when empty it comes from the installer's stream metadata.
	Path string `json:"path,omitempty"`
	// Kernel and Initrd select direct kernel boot.
	Kernel  string `json:"kernel,omitempty"`
	Initrd  string `json:"initrd,omitempty"`
	Cmdline string `json:"cmdline,omitempty"`
	// RehearsalInitrd replaces Initrd on the bootstrap node of a rehearsal
	// lab: the probe initrd plus the tools the stage scripts run (bash,
	// coreutils, jq, etcd). The other nodes keep the small Initrd.
	RehearsalInitrd string `json:"rehearsalInitrd,omitempty"`
}

// Topology is the short form of the node list.
type Topology struct {
	Masters int `json:"masters"`
	Workers int `json:"workers"`
}

// Node is one VM.
type Node struct {
	// Name is the short host name; the FQDN is <name>.<cluster domain>.
	Name      string `json:"name"`
	Role      Role   `json:"role"`
	VCPUs     int    `json:"vcpus"`
	MemoryMiB int    `json:"memoryMiB"`
	DiskGiB   int    `json:"diskGiB"`
	MAC       string `json:"mac"`
	IP        string `json:"ip"`
}

// OpenShift configures the real install flow (ignored by the probe profile).
type OpenShift struct {
	// Version is the OpenShift release whose openshift-install and oc are used.
	Version string `json:"version,omitempty"`
	// PullSecretFile is the pull secret from console.redhat.com. Without one,
	// `lab up` builds a probe lab.
	PullSecretFile string `json:"pullSecretFile,omitempty"`
	// SSHPublicKeyFile goes into install-config sshKey beside the lab's own key
	// (which bootlab's SSH, stages and gather use).
	SSHPublicKeyFile string `json:"sshPublicKeyFile,omitempty"`
	// ManualBootstrap masks bootkube.service so the learner drives `bootlab stage`.
	// On a probe lab it makes the bootstrap a rehearsal bootstrap (see
	// Spec.Rehearsal): SSH, bash, coreutils, jq and etcd on the node, and
	// nothing started that the stages start.
	ManualBootstrap bool `json:"manualBootstrap,omitempty"`
	// InstallerPath and OCPath use binaries given by path instead of the cache.
	InstallerPath string `json:"installerPath,omitempty"`
	OCPath        string `json:"ocPath,omitempty"`
	// Mirrors are base URLs, for offline classrooms.
	Mirrors Mirrors `json:"mirrors,omitempty"`
	// ClusterNetwork is install-config networking.clusterNetwork: the pod
	// network blocks, each cut into one /hostPrefix per node. Defaults to the
	// installer's 10.128.0.0/14 with hostPrefix 23 (openshift profile).
	ClusterNetwork []ClusterNetwork `json:"clusterNetwork,omitempty"`
	// ServiceNetwork is install-config networking.serviceNetwork: the one
	// IPv4 block of Service cluster IPs. Defaults to the installer's 172.30.0.0/16.
	ServiceNetwork []string `json:"serviceNetwork,omitempty"`
}

// StageSettings tune `bootlab stage` on the lab.
type StageSettings struct {
	// Checkpoints makes `stage run` checkpoint the bootstrap node before
	// the first stage it runs (before-NN), for `stage reset NN`. Default
	// true; `stage run --no-checkpoint` turns it off for one run.
	Checkpoints *bool `json:"checkpoints,omitempty"`
}

// StageCheckpoints reports whether `stage run` takes its before-NN
// checkpoints on this lab (a lab recorded before the field existed: yes).
func (s *Spec) StageCheckpoints() bool {
	return s.Stages.Checkpoints == nil || *s.Stages.Checkpoints
}

// ClusterNetwork is one pod network block of install-config networking.clusterNetwork.
type ClusterNetwork struct {
	CIDR string `json:"cidr"`
	// HostPrefix is the prefix length of each node's share of CIDR (23: 510 pod addresses a node).
	HostPrefix int `json:"hostPrefix"`
}

// defaultMachineCIDR is network.cidr unless set: the old libvirt platform's machine network.
const defaultMachineCIDR = "192.168.126.0/24"

// The installer's networking defaults (openshift/installer pkg/types/defaults).
const (
	DefaultClusterNetworkCIDR = "10.128.0.0/14"
	DefaultClusterHostPrefix  = 23
	DefaultServiceNetworkCIDR = "172.30.0.0/16"
)

// Mirrors are base URLs of the public download locations.
type Mirrors struct {
	// Clients hosts <version>/openshift-install-linux.tar.gz, openshift-client-linux.tar.gz, sha256sum.txt.
	Clients string `json:"clients,omitempty"`
	// RHCOS replaces the scheme+host of the stream metadata's artifact URLs.
	RHCOS string `json:"rhcos,omitempty"`
}

// Rehearsal reports whether the lab is a rehearsal lab: a probe lab built
// with openshift.manualBootstrap, whose bootstrap node offers SSH and runs
// the stage scripts instead of starting its services at boot.
func (s *Spec) Rehearsal() bool {
	return s.Profile == ProfileProbe && s.OpenShift.ManualBootstrap
}

// RehearsalCmdlineFlag is on the kernel command line of every node of a
// rehearsal lab, for the probe agent (which reads lab/probe's twin of it;
// lab/probe's tests hold the two equal: the agent never imports lab).
const RehearsalCmdlineFlag = "bootlab.rehearsal"

// RehearsalBootstrapMemoryMiB is the default memory of a rehearsal
// bootstrap node: the probe agent plus real etcd and the stage scripts.
const RehearsalBootstrapMemoryMiB = 512

// RehearsalMasterMemoryMiB is the default memory of a rehearsal lab's
// master: the probe agent, the rehearsal initrd's tools and a real etcd
// member that joins the bootstrap's after stage 12.
const RehearsalMasterMemoryMiB = 384

// RehearsalBootstrapMinMemoryMiB is the least a rehearsal bootstrap is
// given: below it etcd and the rendered stages do not fit beside the
// initramfs.
const RehearsalBootstrapMinMemoryMiB = 384

// FQDN returns the node's fully qualified name in the lab's cluster domain.
func (s *Spec) FQDN(n Node) string { return n.Name + "." + s.Cluster.Domain() }

// NodesByRole returns the nodes with role r, in spec order.
func (s *Spec) NodesByRole(r Role) []Node {
	var out []Node
	for _, n := range s.Nodes {
		if n.Role == r {
			out = append(out, n)
		}
	}
	return out
}

// MastersSchedulable is true when the masters run workloads as well: in a
// lab without workers, as in a compact (three-node) or single-master
// cluster, where the installer's cluster-scheduler manifest must say so.
func (s *Spec) MastersSchedulable() bool { return len(s.NodesByRole(RoleWorker)) == 0 }

// IngressNodes returns the nodes that run the ingress routers, and so the
// ones the load balancer sends 80 and 443 to and a probe lab's agents serve
// the ingress stand-in on: the workers, or the masters when there are none
// (the routers are scheduled on the schedulable masters). It is the one
// place that decides who serves ingress.
func (s *Spec) IngressNodes() []Node {
	if s.MastersSchedulable() {
		return s.NodesByRole(RoleMaster)
	}
	return s.NodesByRole(RoleWorker)
}

// Node returns the node called name.
func (s *Spec) Node(name string) (Node, bool) {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

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

// Load reads a spec file. It does not apply defaults or validate.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("lab spec %s not found: create it (see `bootlab lab config -o yaml` for a full example) or pass -f", path)
		}
		return nil, fmt.Errorf("read lab spec: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a spec, rejecting unknown fields so a typo names itself.
func Parse(data []byte, source string) (*Spec, error) {
	var s Spec
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &ValidationError{Source: source, Errs: []FieldError{typeFieldError(data, te)}}
		}
		return nil, &ValidationError{Source: source, Errs: []FieldError{yamlFieldError(err)}}
	}
	var keys struct {
		Topology map[string]any `json:"topology"`
	}
	if err := yaml.Unmarshal(data, &keys); err == nil {
		_, s.mastersGiven = keys.Topology["masters"]
	}
	return &s, nil
}

// typeFieldError says what a field of the wrong type should hold, in the
// spec's words rather than Go's ("want a whole number, got "2"", the line).
func typeFieldError(data []byte, te *json.UnmarshalTypeError) FieldError {
	field := te.Field
	want := "a value of another type"
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.String:
		want = "text"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "a list (lines starting with '- ')"
	case reflect.Struct, reflect.Map:
		want = "a mapping (key: value lines)"
	}
	got := "a " + te.Value
	var doc any
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if v, ok := lookupPath(doc, strings.Split(field, ".")); ok {
			if b, err := json.Marshal(v); err == nil && len(b) <= 40 {
				got = string(b)
			}
		}
	}
	msg := fmt.Sprintf("want %s, got %s", want, got)
	if line := keyLine(data, field); line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	return FieldError{Field: field, Msg: msg}
}

// lookupPath follows a dotted path of mapping keys in a decoded document.
func lookupPath(doc any, path []string) (any, bool) {
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[k]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// keyLine is the line of the first "KEY:" of a dotted field's last key.
func keyLine(data []byte, field string) int {
	key := field[strings.LastIndex(field, ".")+1:]
	re := regexp.MustCompile(`(^|[\s{,])` + regexp.QuoteMeta(key) + `\s*:`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

func yamlFieldError(err error) FieldError {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return FieldError{Field: strings.Trim(name, `"`), Msg: "unknown field: check its spelling and place against `bootlab lab config -o yaml`"}
	}
	return FieldError{Field: "(file)", Msg: msg + ": fix the YAML syntax"}
}

// Marshal renders the spec as YAML.
// Keys keep the spec's own order (apiVersion and kind first, as the Spec
// type lists them), not the alphabetical order a map would give.
func (s *Spec) Marshal() ([]byte, error) {
	j, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	// JSON is YAML: a yaml.v3 node keeps the order of the keys it reads.
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(j, &n); err != nil {
		return nil, err
	}
	plainStyle(&n)
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// plainStyle drops the flow and quoting styles a node read from JSON has,
// so the YAML reads like one a person wrote.
func plainStyle(n *yamlv3.Node) {
	n.Style &^= yamlv3.FlowStyle | yamlv3.DoubleQuotedStyle
	for _, c := range n.Content {
		plainStyle(c)
	}
}

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

// MaxNodes is the most nodes a lab has: its machine network is one /24
// (gateway, load balancer and DHCP range included).
const MaxNodes = 250

// Defaults fills every zero field. It is idempotent and never overrides a
// value the user set.
func (s *Spec) Defaults() {
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
	if s.Storage.PoolDir == "" {
		s.Storage.PoolDir = filepath.Join("/var/lib/libvirt/images", "bootlab-"+s.Name)
	}
	if s.Accelerator == "" {
		s.Accelerator = AccelAuto
	}
	if s.LabDir == "" {
		s.LabDir = filepath.Join(DefaultHome(), "labs", s.Name)
	}
	if s.OpenShift.Version == "" && s.Profile == ProfileOpenShift {
		s.OpenShift.Version = DefaultOpenShiftVersion
	}
	if s.Stages.Checkpoints == nil {
		on := true
		s.Stages.Checkpoints = &on
	}
	// Probe labs render no install-config: their networks stay unset unless
	// the user wrote them (then Validate checks them and warns).
	if s.Profile == ProfileOpenShift {
		if len(s.OpenShift.ClusterNetwork) == 0 {
			s.OpenShift.ClusterNetwork = []ClusterNetwork{{CIDR: DefaultClusterNetworkCIDR, HostPrefix: DefaultClusterHostPrefix}}
		}
		if len(s.OpenShift.ServiceNetwork) == 0 {
			s.OpenShift.ServiceNetwork = []string{DefaultServiceNetworkCIDR}
		}
	}
	if len(s.Nodes) == 0 && s.Topology.Masters+s.Topology.Workers+1 <= MaxNodes {
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
	// The topology always reflects the node list, so `lab config` is truthful
	// (a negative count stays, for Validate to name).
	if len(s.Nodes) > 0 && s.Topology.Masters >= 0 && s.Topology.Workers >= 0 {
		s.Topology = Topology{Masters: len(s.NodesByRole(RoleMaster)), Workers: len(s.NodesByRole(RoleWorker))}
	}

	used := map[string]bool{}
	for _, n := range s.Nodes {
		used[n.IP] = true
	}
	var next = map[Role]int{RoleBootstrap: 10, RoleMaster: 11, RoleWorker: 20}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		size := profileSizes[s.Profile][n.Role]
		if n.VCPUs == 0 {
			n.VCPUs = size.VCPUs
		}
		if n.MemoryMiB == 0 {
			n.MemoryMiB = size.MemoryMiB
			if n.Role == RoleBootstrap && s.Rehearsal() {
				n.MemoryMiB = RehearsalBootstrapMemoryMiB
			}
			if n.Role == RoleMaster && s.Rehearsal() {
				n.MemoryMiB = RehearsalMasterMemoryMiB
			}
		}
		if n.DiskGiB == 0 {
			n.DiskGiB = size.DiskGiB
		}
		if n.MAC == "" {
			n.MAC = DeriveMAC(s.Name, n.Name)
		}
		if n.IP == "" && perr == nil {
			// bootstrap .10, masters .11.., workers .20.. as the old libvirt
			// platform did, skipping addresses already taken.
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
