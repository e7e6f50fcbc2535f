// Package hypervisor is the port through which bootlab drives a hypervisor:
// the few libvirt calls lab makes, as Go interfaces, and the values they
// carry (Object, Volume, NetworkEdit, Lease, Snapshot). It owns no
// behaviour.
//
// The port is split by resource (HostInfo, Machine, Networks, Pools,
// Volumes, Domains, Snapshots) so that a function states the calls it needs,
// e.g. one that only manages disks takes a Volumes; Hypervisor is all of
// them together.
//
// lab/libvirt implements Hypervisor over one go-libvirt connection (local,
// qemu+ssh or test:///default); lab/hypervisor/fake is the in-memory
// implementation every package's unit tests share. The package imports
// only lab/host (the machine the hypervisor runs on), never lab, so an
// implementation never depends on the orchestration that uses it.
package hypervisor
