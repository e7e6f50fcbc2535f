package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab/hostdns"
	"github.com/bootlab/bootlab/lab/labdir"
)

// setUpHostDNS lets this machine resolve an OpenShift lab's cluster domain
// through the lab's dnsmasq (split DNS, never the global resolver) and
// records how, so `lab down` undoes exactly that. A remote lab's dnsmasq
// listens on a bridge of the hypervisor's machine, which this one does not
// route to: host DNS is a workstation concern, off for a remote lab
// (README, "Remote hypervisor"; `lab dns-proxy` answers for it instead).
func setUpHostDNS(ctx context.Context, s *spec.Spec, hv hypervisor.Hypervisor, o BuildOptions) error {
	if s.Remote() {
		o.Status.Infof("host DNS for %s is not set up: the lab network is on %s (see \"Remote hypervisor\" in the README)", s.Cluster.Domain(), hv.Host().Name())
		return nil
	}
	// Set up again on every up even when recorded: it is idempotent, and
	// systemd-resolved forgets per-link settings when the bridge is
	// recreated (a host reboot, a restarted libvirt network).
	o.Status.Start("Resolving *.%s on this host through the lab's DNS", s.Cluster.Domain())
	record, err := hostdns.Setup(ctx, s)
	var manual *hostdns.ManualStepError
	if errors.As(err, &manual) {
		o.Status.End(false)
		o.Status.Infof("host name resolution for %s is not set up: %s", s.Cluster.Domain(), manual.Steps)
		return nil
	}
	if err != nil {
		o.Status.End(false)
		return fmt.Errorf("set up host DNS for %s: %w", s.Cluster.Domain(), err)
	}
	if err := UpdateState(s, false, func(st *labdir.State) error {
		if !st.HostDNS.IsZero() && st.HostDNS != record {
			// The host changed resolvers since: undo the old way first.
			if err := hostdns.Undo(ctx, st.HostDNS); err != nil && o.Log != nil {
				o.Log.Warn("could not undo the earlier host DNS setup", "record", st.HostDNS, "err", err)
			}
		}
		st.HostDNS = record
		return nil
	}); err != nil {
		o.Status.End(false)
		return err
	}
	o.Status.End(true)
	return nil
}
