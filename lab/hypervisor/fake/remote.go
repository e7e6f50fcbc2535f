package fake

import (
	"path/filepath"

	"github.com/bootlab/bootlab/lab/spec"
)

// RemoteURI is the remote hypervisor RemoteLab's labs name: never
// dialled, the fake stands for it.
const RemoteURI = "qemu+ssh://root@hypervisor/system"

// RemoteLab is a probe lab of one master on a remote hypervisor, its
// directory under home/labs, with a fake hypervisor whose host machine is
// remote: what the tests that read a lab's files on the hypervisor's
// machine (its console logs) build with lab.Up first.
func RemoteLab(home, name, cidr string) (*spec.Spec, *Hypervisor) {
	s := &spec.Spec{Name: name, Profile: spec.ProfileProbe, Libvirt: spec.Libvirt{URI: RemoteURI},
		LabDir: filepath.Join(home, "labs", name), Topology: spec.Topology{Masters: 1}, Network: spec.Network{CIDR: cidr}}
	s.Defaults()
	hv := New()
	hv.Machine = NewMachine(true)
	return s, hv
}
