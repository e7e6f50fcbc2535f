package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab/class"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/spec"
)

// ClassFacts reads what a class is checked against (class.Expand): the
// labs under the bootlab home and every target, measured at once, each
// over its own connection: its libvirt networks, and where its machine
// can be read (not the test driver, not a transport that carries libvirt
// only) its routes, memory, disk under poolDir, CPUs, KVM and labs, as
// `lab preflight` reads them. A named target that cannot be reached is a
// fact of the class (class.Host.Err); the host of a class without hosts
// must answer, as before.
func ClassFacts(ctx context.Context, connect hypervisor.Connector, targets []class.Target, poolDir string, log *slog.Logger) (class.Facts, error) {
	var f class.Facts
	var err error
	if f.Labs, err = labdir.Find(spec.DefaultHome()); err != nil {
		return f, err
	}
	if connect == nil {
		connect = ConnectLibvirt
	}
	f.Hosts = make([]class.Host, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.Hosts[i], errs[i] = measureClassHost(ctx, connect, t, poolDir, log)
		}()
	}
	wg.Wait()
	for i, t := range targets {
		if errs[i] == nil {
			continue
		}
		if t.Name == "" || ctx.Err() != nil {
			return f, errs[i]
		}
		f.Hosts[i] = class.Host{Name: t.Name, Err: errs[i]}
	}
	return f, nil
}

// measureClassHost is one target of ClassFacts.
func measureClassHost(ctx context.Context, connect hypervisor.Connector, t class.Target, poolDir string, log *slog.Logger) (class.Host, error) {
	h := class.Host{Name: t.Name}
	hv, err := connect(ctx, t.URI, log)
	if err != nil {
		return h, err
	}
	defer hv.Close()
	if h.Networks, err = hv.Networks(ctx); err != nil {
		return h, fmt.Errorf("list libvirt networks on %s: %w", t.URI, err)
	}
	machine := hv.Host()
	_, libvirtOnly := machine.(host.LibvirtOnly)
	if !hv.Capabilities().RunsGuests || libvirtOnly {
		// Nothing to measure: the routes are this machine's, as a lab's
		// preflight reads them for such a URI.
		h.Routes, err = preflight.HostRoutes()
		return h, err
	}
	m, err := preflight.MeasureHost(ctx, machine, poolDir)
	if err != nil {
		return h, err
	}
	h.Routes = m.Routes
	types, err := hv.DomainTypes(ctx)
	if err != nil {
		return h, fmt.Errorf("ask libvirt on %s for its guest types: %w", t.URI, err)
	}
	h.Capacity = &class.Capacity{
		MemoryBytes: m.MemoryBytes, MemoryTotalBytes: m.MemoryTotalBytes,
		DiskBytes: m.DiskBytes, DiskDir: m.DiskDir, CPUs: m.CPUs,
		KVM: slices.Contains(types, "kvm"),
	}
	for _, n := range h.Networks {
		if strings.HasPrefix(n.Name, "bootlab-") {
			h.Capacity.Labs++
		}
	}
	return h, nil
}
