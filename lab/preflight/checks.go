package preflight

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

func checkLibvirt(ctx context.Context, s *spec.Spec, host hypervisor.HostInfo, connErr error) check.Result {
	c := check.Result{Name: CheckLibvirt, State: check.StateFailed}
	fix := connectFix(s, nil)
	if host == nil {
		c.Detail = fmt.Sprintf("cannot connect to %s", s.Libvirt.URI)
		if connErr != nil {
			c.Detail += ": " + connErr.Error()
		}
		c.Fix = connectFix(s, connErr)
		return c
	}

	v, err := host.LibvirtVersion(ctx)
	if err != nil {
		c.Detail = fmt.Sprintf("%s does not answer: %v", s.Libvirt.URI, err)
		c.Fix = fix
		return c
	}
	c.State = check.StatePassed
	c.Detail = fmt.Sprintf("libvirt %s at %s", v, s.Libvirt.URI)
	return c
}

func checkTool(h HostFacts, name, binary, fix string) check.Result {
	p, err := h.LookPath(binary)
	if err != nil {
		return check.Result{Name: name, State: check.StateFailed, Detail: binary + " not found on PATH", Fix: fix}
	}
	return check.Result{Name: name, State: check.StatePassed, Detail: p}
}

func checkNetwork(ctx context.Context, s *spec.Spec, host hypervisor.HostInfo, h HostFacts) check.Result {
	c := check.Result{Name: CheckNetwork, State: check.StateFailed}
	routes, err := h.Routes()
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "make /proc/net/route readable"
		return c
	}
	var nets []hypervisor.NetworkInfo
	if host != nil {
		if nets, err = host.Networks(ctx); err != nil {
			c.Detail = fmt.Sprintf("cannot list libvirt networks: %v", err)
			c.Fix = "check `virsh -c " + s.Libvirt.URI + " net-list --all`"
			return c
		}
	}
	err = ValidateHost(s, routes, nets)
	if err == nil && capabilities(host).HostNetwork {
		// The test driver makes no bridge on the host: nothing to collide with.
		var ifaces []string
		if ifaces, err = h.Interfaces(); err == nil {
			err = ValidateBridge(s, ifaces, nets)
		}
	}
	if err != nil {
		var ve *spec.ValidationError
		if errors.As(err, &ve) {
			var msgs []string
			for _, fe := range ve.Errs {
				msgs = append(msgs, fe.String())
			}
			c.Detail = strings.Join(msgs, "; ")
		} else {
			c.Detail = err.Error()
		}
		c.Fix = "choose a free range with --cidr (or network.cidr), or a different lab name for another bridge"
		return c
	}
	c.State = check.StatePassed
	c.Detail = fmt.Sprintf("%s overlaps no host route or other libvirt network", s.Network.CIDR)
	if host == nil {
		c.State = check.StateWarning
		c.Detail = fmt.Sprintf("%s overlaps no host route; libvirt networks not checked (no connection)", s.Network.CIDR)
	}
	return c
}

func checkMemory(s *spec.Spec, h HostFacts) check.Result {
	c := check.Result{Name: CheckMemory, State: check.StateFailed}
	need := LabNeeds(s).MemoryBytes
	avail, err := memAvailable(h.ReadFile, h.MemInfo)
	if err != nil {
		c.Detail = fmt.Sprintf("cannot read available memory: %v", err)
		c.Fix = "check " + h.MemInfo
		return c
	}
	if need > avail {
		c.Detail = fmt.Sprintf("the nodes need %s, the host has %s available", human(need), human(avail))
		c.Fix = "lower nodes[].memoryMiB, use fewer workers (--workers 0) or masters, or stop other VMs"
		if s.Profile == spec.ProfileOpenShift {
			c.Fix += "; the openshift profile's sizes are the documented minimums, a probe lab (--profile probe) needs 256 MiB per node"
		}
		if s.Rehearsal() {
			c.Fix += fmt.Sprintf("; a rehearsal lab runs the real control plane: %d MiB for the bootstrap and %d MiB per master by default (at least %d for the bootstrap)",
				spec.RehearsalBootstrapMemoryMiB, spec.RehearsalMasterMemoryMiB, spec.RehearsalBootstrapMinMemoryMiB)
		}
		return c
	}
	c.State = check.StatePassed
	c.Detail = fmt.Sprintf("the nodes need %s of %s available", human(need), human(avail))
	return c
}

// overlayGrowth is how much one node's overlay grows during a lab's life:
// a probe node boots from its initramfs and barely writes its disk; an RHCOS
// node pulls the release images (~10 GiB on the bootstrap and each master
// by bootstrap-complete).
func overlayGrowth(p spec.Profile) uint64 {
	if p == spec.ProfileProbe {
		return 16 * mib
	}
	return 10 * gib
}

// baseImageEstimate is the size assumed for a base image not yet on disk
// (an RHCOS qcow2 is ~2.5 GiB uncompressed qcow2 data).
const baseImageEstimate = 3 * gib

func checkDisk(s *spec.Spec, h HostFacts) check.Result {
	c := check.Result{Name: CheckDisk, State: check.StateFailed}
	need := LabNeeds(s).DiskBytes
	_, base := baseImageNeed(s)
	if _, kube := kubeVolumeNeed(s); kube != "" {
		base += " + " + kube
	}
	dir := nearestExisting(s.Storage.PoolDir, h)
	free, err := h.FreeBytes(dir)
	if err != nil {
		c.Detail = fmt.Sprintf("cannot read free space of %s: %v", dir, err)
		c.Fix = "check storage.poolDir " + s.Storage.PoolDir
		return c
	}
	detail := fmt.Sprintf("%s needs %s (%s + %d overlays × %s), %s has %s free",
		s.Storage.PoolDir, human(need), base, len(s.Nodes), human(overlayGrowth(s.Profile)), dir, human(free))
	if need > free {
		c.Detail = detail
		c.Fix = "free space on " + dir + " or set storage.poolDir to a larger filesystem"
		return c
	}
	c.State = check.StatePassed
	c.Detail = detail
	return c
}

// nearestExisting returns path or its closest existing parent.
func nearestExisting(path string, h HostFacts) string {
	p := filepath.Clean(path)
	for {
		if _, err := h.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}

// checkAccess checks that the qemu user can traverse every existing
// directory from / down to dir (qemu opens disks, kernels and Ignition
// files there). Directories not yet created are made 0755 by bootlab.
func checkAccess(name, field, dir string, h HostFacts) check.Result {
	c := check.Result{Name: name, State: check.StateFailed}
	u := qemuUser(h)
	if u == nil {
		c.State = check.StateWarning
		c.Detail = "no libvirt-qemu or qemu user on this host: access of " + dir + " not checked"
		return c
	}
	clean := filepath.Clean(dir)
	var blocked []string
	p := "/"
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for i := 0; ; i++ {
		fo, err := h.Stat(p)
		if err != nil {
			break // created later by bootlab, 0755
		}
		if !canAccess(fo, u, 01) {
			blocked = append(blocked, fmt.Sprintf("%s (mode %04o)", p, fo.Mode.Perm()))
		}
		if i >= len(parts) || parts[i] == "" {
			break
		}
		p = filepath.Join(p, parts[i])
	}
	if len(blocked) > 0 {
		c.Detail = fmt.Sprintf("the qemu user %s cannot traverse %s", u.Name, strings.Join(blocked, ", "))
		c.Fix = fmt.Sprintf("chmod o+x %s   (or move %s under a directory qemu can reach, e.g. /var/lib/bootlab)", strings.Join(dirsOf(blocked), " "), field)
		return c
	}
	c.State = check.StatePassed
	c.Detail = fmt.Sprintf("%s can reach %s", u.Name, clean)
	return c
}

func dirsOf(blocked []string) []string {
	out := make([]string, len(blocked))
	for i, b := range blocked {
		out[i] = strings.SplitN(b, " ", 2)[0]
	}
	return out
}
