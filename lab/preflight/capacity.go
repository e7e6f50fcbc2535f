package preflight

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/spec"
)

// Needs is what one lab takes from the host, by the same rules as the
// memory and disk checks of preflight: every node's memory, and in its pool
// the base image plus each overlay's expected growth.
type Needs struct {
	MemoryBytes uint64
	DiskBytes   uint64
}

// LabNeeds is what lab s needs of the host (a class sums it over its labs).
func LabNeeds(s *spec.Spec) Needs {
	var n Needs
	for _, node := range s.Nodes {
		n.MemoryBytes += uint64(node.MemoryMiB) * mib
	}
	base, _ := baseImageNeed(s)
	kube, _ := kubeVolumeNeed(s)
	n.DiskBytes = uint64(len(s.Nodes))*overlayGrowth(s.Profile) + base + kube
	return n
}

// kubeVolumeEstimate is the pool space assumed for a rehearsal lab's
// Kubernetes volume not built yet: 1.32.13's is 38.3 MiB.
const kubeVolumeEstimate = 48 * mib

// kubeVolumeNeed is the pool space of a rehearsal lab's Kubernetes volume
// (lab up uploads one copy into the pool), and how to say it; nothing for
// any other lab.
func kubeVolumeNeed(s *spec.Spec) (uint64, string) {
	if !s.Rehearsal() {
		return 0, ""
	}
	if s.Image.KubeVolume != "" {
		if fi, err := os.Stat(s.Image.KubeVolume); err == nil {
			return uint64(fi.Size()), "Kubernetes volume " + human(uint64(fi.Size()))
		}
	}
	return kubeVolumeEstimate, "Kubernetes volume ~" + human(kubeVolumeEstimate)
}

// baseImageNeed is the pool space lab s's base image takes, and how to
// say it: the file's size when it is on disk, an estimate for an RHCOS
// image still to download, nothing for a lab that boots no base image.
func baseImageNeed(s *spec.Spec) (uint64, string) {
	if s.Image.Path != "" {
		if fi, err := os.Stat(s.Image.Path); err == nil {
			return uint64(fi.Size()), "base image " + human(uint64(fi.Size()))
		}
	} else if s.Profile == spec.ProfileOpenShift {
		return baseImageEstimate, "RHCOS base image ~" + human(baseImageEstimate)
	}
	return 0, "no base image"
}

// HostCapacity is what the host offers labs: memory available now and the
// free space of the filesystem a pool directory would be made on.
type HostCapacity struct {
	MemoryBytes uint64
	DiskBytes   uint64
	// DiskDir is the existing directory whose filesystem DiskBytes is of.
	DiskDir string
}

// ReadHostCapacity reads the host's available memory and the free space
// under poolDir (its nearest existing parent), through h (zero: the real host).
func ReadHostCapacity(h HostFacts, poolDir string) (HostCapacity, error) {
	h = h.withDefaults()
	mem, err := memAvailable(h.ReadFile, h.MemInfo)
	if err != nil {
		return HostCapacity{}, err
	}
	dir := nearestExisting(poolDir, h)
	free, err := h.FreeBytes(dir)
	if err != nil {
		return HostCapacity{}, err
	}
	return HostCapacity{MemoryBytes: mem, DiskBytes: free, DiskDir: dir}, nil
}

// HumanBytes is a byte count as preflight prints it (1.5 GiB, 256.0 MiB).
func HumanBytes(b uint64) string { return human(b) }

// Machine is a hypervisor's machine as a class places labs on it: the
// room HostCapacity measures, all its memory, its CPUs and its routes.
type Machine struct {
	HostCapacity
	MemoryTotalBytes uint64
	CPUs             int
	Routes           []HostRoute
}

// MeasureHost reads h as preflight reads a lab's host, through its SSH
// connection when h is remote: memory available and in all, the space
// free under poolDir (its nearest existing parent), CPUs and routes.
func MeasureHost(ctx context.Context, h host.Host, poolDir string) (Machine, error) {
	var f HostFacts
	if h.Remote() {
		f = remoteFacts(ctx, h, f)
	}
	c, err := ReadHostCapacity(f, poolDir)
	if err != nil {
		return Machine{}, fmt.Errorf("read the memory and disk of %s: %w", h.Name(), err)
	}
	f = f.withDefaults()
	m := Machine{HostCapacity: c}
	if m.MemoryTotalBytes, err = memField(f.ReadFile, f.MemInfo, "MemTotal:"); err != nil {
		return Machine{}, err
	}
	cpuinfo, err := f.ReadFile("/proc/cpuinfo")
	if err != nil {
		return Machine{}, fmt.Errorf("read the CPUs of %s: %w", h.Name(), err)
	}
	for _, line := range strings.Split(string(cpuinfo), "\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "processor" {
			m.CPUs++
		}
	}
	if m.Routes, err = f.Routes(); err != nil {
		return Machine{}, err
	}
	return m, nil
}
