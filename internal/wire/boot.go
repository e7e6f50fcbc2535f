package wire

// ModuleDir is where the probe initramfs holds the kernel modules;
// ModuleOrderFile lists them, in load order, for the agent.
const (
	ModuleDir       = "/lib/modules/bootlab"
	ModuleOrderFile = "/lib/modules/bootlab/order"
)

// The Kubernetes volume: the release's hyperkube and a link per program
// in an ext4 file system, attached read-only to a rehearsal lab's
// bootstrap and masters (lab/probe builds it). The agent finds the disk
// by its serial, mounts it read-only at KubeVolumeMount and puts
// KubeVolumeBin on PATH. docs/cache.md says why a volume and not the
// initrd.
const (
	// KubeVolumeSerial is the disk serial the domains give the volume
	// (/sys/block/vdX/serial in the guest).
	KubeVolumeSerial = "bootlab-kube"
	// KubeVolumeMount is where the agent mounts it; KubeVolumeBin holds
	// hyperkube and its links.
	KubeVolumeMount = "/opt/bootlab/kubernetes"
	KubeVolumeBin   = KubeVolumeMount + "/bin"
)

// The node disk: a rehearsal node's own qcow2 overlay, which keeps what
// RHCOS keeps across a reboot (/etc, /var; docs/rehearsal-lab.md). The
// domains give it NodeDiskSerial; the agent makes an ext4 file system
// labelled NodeDiskLabel on it only when it reads as blank, mounts it at
// NodeDiskMount and bind-mounts its trees over the initramfs's.
const (
	NodeDiskSerial = "bootlab-node"
	NodeDiskLabel  = "bootlab-node"
	NodeDiskMount  = "/sysroot"
)

// KubePrograms are the names under KubeVolumeBin: hyperkube, the one
// binary, first, then the programs it answers to by name, each a link to
// it (lab/gobuild builds it to answer to them).
func KubePrograms() []string {
	return []string{"hyperkube", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}
}

// A saved start: lab up boots one probe node as a template, saves its
// memory once the agent waits at SavedStartReady, and starts the lab's
// nodes from copies of that image instead of booting each (lab/savedstart).
// SavedStartEntry is the fw_cfg entry only a template has; the agent waits
// while it is there, reloading its fw_cfg driver, and once it is gone (a
// node restored with its own fw_cfg) it loads its modules, reseeds the
// kernel's random pool from the virtio RNG, sets its clock from the RTC
// and starts again, a node like any other.
// SavedStartDeclined starts the line of an agent that cannot be a
// template (its kernel has the drivers built in that must bind after the
// restore), followed by why.
const (
	SavedStartEntry    = "opt/org.bootlab/saved-start"
	SavedStartReady    = "bootlab-probe: saved-start template ready"
	SavedStartDeclined = "bootlab-probe: saved-start template declined: "
)
