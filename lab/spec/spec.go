package spec

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
	// KubeVolume is the read-only disk (a qcow2 with an ext4 file system)
	// holding the release's Kubernetes (hyperkube, kube-apiserver,
	// kube-controller-manager, kube-scheduler, kubectl) that the bootstrap
	// and masters of a rehearsal lab mount; `lab up` builds it into the
	// cache when empty. Other labs ignore it.
	KubeVolume string `json:"kubeVolume,omitempty"`
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

// RehearsalBootstrapMemoryMiB is the default memory of a rehearsal
// bootstrap node: the probe agent, real etcd, the stage scripts and the
// real bootstrap control plane. Measured under TCG (docs/rehearsal-lab.md):
// 330 MiB in use after stage 07, kube-apiserver 205 MiB more once ready,
// the controller manager and scheduler about 100 MiB each, and the pages
// of hyperkube they run; the rest is room for stage 13's objects.
const RehearsalBootstrapMemoryMiB = 1536

// RehearsalMasterMemoryMiB is the default memory of a rehearsal lab's
// master: the probe agent, the rehearsal initrd's tools, a real etcd
// member that joins the bootstrap's during stage 13 and the master's
// kube-apiserver.
const RehearsalMasterMemoryMiB = 1024

// RehearsalBootstrapMinMemoryMiB is the least a rehearsal bootstrap is
// given: below it etcd, the stages and the bootstrap control plane do not
// fit beside the initramfs.
const RehearsalBootstrapMinMemoryMiB = 1024

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
