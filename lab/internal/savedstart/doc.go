// Package savedstart starts probe nodes from a saved memory image instead
// of booting them: a probe node's kernel boot under TCG, to the agent's
// first line, is half the CPU it takes to pass `lab verify`, and the same
// for every node of every lab of the same image.
//
// lab up boots one node of a lab as a template (its own definition, with
// the fw_cfg entry probe.SavedStartEntry instead of its Ignition), waits
// for the agent to write probe.SavedStartReady, and has libvirt save its
// memory (virDomainSave) into the probe image's cache directory. A node
// then starts from a copy of that image whose header carries the node's
// own definition (virDomainRestore): QEMU loads the template's memory,
// the agent wakes in its wait, reads its own fw_cfg, loads its drivers
// (the NIC's MAC is the node's: QEMU resets the device as its driver binds),
// reseeds the kernel's random pool from the virtio RNG, sets its clock from
// the RTC and starts again as that node (internal/agent/savedstart_linux.go).
//
// The image is keyed by everything of the definition that a save image
// must match (machine, CPU, memory, devices and their addresses, kernel,
// initrd and command line) and by the QEMU and libvirt it was made with;
// names, UUIDs, MACs, disks' sources, console logs and fw_cfg entries are
// each node's own. Anything that fails (no template made, a restore
// refused) leaves the node to boot as before, and says so.
package savedstart
