package engine

import (
	"context"
	"fmt"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"log/slog"
	"strings"

	"github.com/bootlab/bootlab/lab/class"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
	"github.com/bootlab/bootlab/lab/spec"
)

// ClassHost reads what a class is checked against (class.Expand): this
// host's routes, the libvirt networks of the daemon at uri (opened with
// connect), the labs under the bootlab home, and, for a local daemon only,
// memory and disk.
func ClassHost(ctx context.Context, connect hypervisor.Connector, uri string, log *slog.Logger) (class.Host, error) {
	var h class.Host
	routes, err := preflight.HostRoutes()
	if err != nil {
		return h, err
	}
	h.Routes = routes
	if h.Labs, err = labdir.Find(spec.DefaultHome()); err != nil {
		return h, err
	}
	if connect == nil {
		connect = ConnectLibvirt
	}
	hv, err := connect(ctx, uri, log)
	if err != nil {
		return h, err
	}
	defer hv.Close()
	if h.Networks, err = hv.Networks(ctx); err != nil {
		return h, fmt.Errorf("list libvirt networks on %s: %w", uri, err)
	}
	if strings.HasPrefix(uri, "qemu:///") {
		h.Capacity = func(poolDir string) (preflight.HostCapacity, error) {
			return preflight.ReadHostCapacity(preflight.HostFacts{}, poolDir)
		}
	}
	return h, nil
}
