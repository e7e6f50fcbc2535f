// Package plan is the pure half of the converge: a lab spec and a few
// facts read beforehand (the base image, the boot files, the lab's UUID)
// in, the libvirt objects the lab should have out, as libvirt XML (the
// network, the pool, the volumes, the domains with bootlab's metadata).
// It reads nothing and changes nothing, so its output is golden-tested
// (testdata/plan/); lab/internal/engine applies it through the hypervisor
// port and reads the metadata back (ParseLabMetadata) to know its own.
package plan
