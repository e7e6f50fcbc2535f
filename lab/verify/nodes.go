package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// staleSlack allows for the guest clock being a little behind the host's:
// a guest sets its clock from the emulated RTC, which qemu starts at the
// host's time, to the second. A report whose boot is earlier than its VM's
// start by more than this is from an earlier run, however recent: `lab
// up` may restart a node seconds after its last boot, and the reports of
// that boot must not pass for the new one's.
const staleSlack = 5 * time.Second

// silentAfter is how long a running node may print nothing on its console
// before verify blames the boot (the accelerator, the image).
const silentAfter = 90 * time.Second

// nodeChecks turns each node's last console report into checks.
func nodeChecks(ctx context.Context, s *spec.Spec, pivoted bool, reports map[string]*wire.Report, opts Options) []check.Result {
	var out []check.Result
	for _, n := range s.Nodes {
		if pivoted && n.Role == spec.RoleBootstrap {
			continue // removed by `lab pivot`: nothing expects it any more
		}
		vm, known := opts.Nodes[n.Name]
		if known && vm.State != "running" {
			// Its console still holds the reports of its last run: not
			// evidence of anything now.
			out = append(out, check.Result{Group: n.Name, Name: "vm", State: check.StateFailed, Detail: fmt.Sprintf("%s is %s (domain %s)", n.Name, vm.State, s.DomainName(n)),
				Fix: notRunningFix(s, n, vm.State)})
			continue
		}
		path := labdir.ConsoleLog(s, n)
		data, err := opts.host().ReadFile(ctx, path)
		exists := err == nil
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		var rep *wire.Report
		var panicLine string
		if err == nil {
			rep, panicLine, err = readReport(data)
		}
		if rep != nil && !vm.Since.IsZero() && rep.Boot.Before(vm.Since.Add(-staleSlack)) {
			// The last report is from an earlier run of the VM.
			err = fmt.Errorf("no probe report since the VM started at %s UTC (the last one in %s is from a boot at %s UTC)",
				vm.Since.UTC().Format(time.TimeOnly), path, rep.Boot.UTC().Format(time.TimeOnly))
			rep = nil
		}
		if err != nil || rep == nil {
			detail := "no probe report in " + path + " yet"
			fix := fmt.Sprintf("is the VM running? `bootlab lab status`; watch it boot with `bootlab lab console %s`", n.Name)
			if n.Role == spec.RoleWorker {
				fix += "; workers start with `bootlab lab up --start-workers`"
			}
			if panicLine != "" {
				detail = "the kernel panicked before the agent reported: " + panicLine
				fix = "the probe image does not boot: rebuild it (`bootlab lab probe-image build`; the agent must be static, CGO_ENABLED=0), then `bootlab lab down && bootlab lab up`"
			} else if silent(exists, len(data), vm) {
				up := time.Since(vm.Since).Round(time.Second)
				detail = fmt.Sprintf("%s has run for %s and printed nothing on its serial console (%s)", n.Name, up, path)
				fix = silentFix(opts.Accelerator)
			}
			if err != nil {
				detail = err.Error()
			}
			out = append(out, check.Result{Group: n.Name, Name: "report", State: check.StateFailed, Detail: detail, Fix: fix})
			continue
		}
		reports[n.Name] = rep
		ahead := clockAhead(s, n, rep, vm, time.Now())
		if rep.MAC != "" && !strings.EqualFold(rep.MAC, n.MAC) {
			out = append(out, check.Result{Group: n.Name, Name: "report", State: check.StateFailed, Detail: fmt.Sprintf("report from MAC %s, the spec says %s", rep.MAC, n.MAC),
				Fix: "the console log belongs to another VM: `bootlab lab down` then `bootlab lab up`"})
		}
		for _, c := range rep.Checks {
			vc := check.Result{Group: n.Name, Name: c.Name, State: check.PassIf(c.OK && !c.Pending), Detail: c.Detail, DurationMS: c.DurationMS}
			if c.Pending {
				vc.Detail = "still pending: " + c.Detail
			}
			if vc.Failed() {
				vc.Fix = nodeFix(s, n, c) + ahead
			}
			out = append(out, vc)
		}
	}
	return out
}

// clockAheadSlack is how far a node's uptime may exceed the time its VM
// has run, by the host's clock, before verify says the node's clock ran
// ahead: more than a remote host's clock may be off this one's, or a
// report's age.
const clockAheadSlack = time.Minute

// clockAhead is what a failing check of node adds to its fix when the
// node's clock ran ahead of the host's while its VM ran: its agent counts
// more uptime than the VM has run. Its own timeouts then ended early (a
// fetch, a DNS answer, a lease), which explains failures nothing else
// does. A TCG guest keeps time by the host CPU's TSC, which can run on
// while the host's own clocks stand still, as when the host, itself a VM,
// is paused (seen in CI: 10 minutes of a node's in 8m06s of the host's
// libvirt log). "" when it did not, or when the VM's start is unknown (a
// restored checkpoint goes on with the uptime it was saved with).
func clockAhead(s *spec.Spec, n spec.Node, rep *wire.Report, vm NodeVM, now time.Time) string {
	if vm.Since.IsZero() {
		return ""
	}
	ran := now.Sub(vm.Since)
	up := rep.Uptime()
	if up-ran < clockAheadSlack {
		return ""
	}
	again := ""
	if s.Rehearsal() && n.Role == spec.RoleBootstrap {
		again = "; its stages then start again from 01"
	}
	return fmt.Sprintf("; note: %s's clock ran %s ahead of this host's (its agent counts %s of uptime in a VM that has run %s), so its own timeouts ended early: "+
		"a TCG guest keeps time by the host CPU's time stamp counter, which can run on while the host's own clock stands still, as when the host, itself a VM, is paused; "+
		"restart it to try again (`virsh reboot %s`%s)", n.Name, (up - ran).Round(time.Second), up.Round(time.Second), ran.Round(time.Second), s.DomainName(n), again)
}

// notRunningFix says how to bring a node's VM back.
func notRunningFix(s *spec.Spec, n spec.Node, state string) string {
	switch {
	case state == "absent":
		return "`bootlab lab up` creates it again"
	case state == "rebooting":
		return "its agent is rebooting it (asked on the node, or by `bootlab lab reboot`): it boots again on its own; `bootlab lab console " + n.Name + "` follows it"
	case state == "powering off" || state == "halting":
		return "its agent is taking it down (asked on the node); once it is off, `bootlab lab up` starts it again"
	case n.Role == spec.RoleWorker && s.Profile == spec.ProfileOpenShift:
		return "`bootlab lab up --start-workers` starts the workers"
	}
	return "`bootlab lab up` starts it again (or `virsh start " + s.DomainName(n) + "`)"
}

// silent is true when a node's VM has run past silentAfter with an empty
// console log: not even the kernel printed.
func silent(exists bool, size int, vm NodeVM) bool {
	if vm.Since.IsZero() || time.Since(vm.Since) < silentAfter {
		return false
	}
	return !exists || size == 0
}

// silentFix blames the likeliest cause of a console that stays silent.
func silentFix(accel spec.Accelerator) string {
	if accel == spec.AccelKVM {
		return "under KVM the guest never reached its kernel: on some hosts KVM hangs guests in firmware. Rebuild the lab under TCG: `bootlab lab down`, then `bootlab lab up --accel tcg` (`bootlab lab preflight --accel kvm` tests KVM with the probe kernel)"
	}
	return "the VM printed nothing: check the probe image (`bootlab lab probe-image build`) and the domain (`virsh dumpxml`), then `bootlab lab down && bootlab lab up`"
}

// readReport returns the last report in a console log; without one, the
// first line of a kernel panic, if the log has one.
func readReport(data []byte) (*wire.Report, string, error) {
	rep, err := wire.ParseConsole(bytes.NewReader(data))
	if rep != nil || err != nil {
		return rep, "", err
	}
	var why string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "Failed to execute /init") || strings.Contains(line, "Kernel panic") {
			if _, rest, ok := strings.Cut(line, "] "); ok {
				line = rest
			}
			if why == "" {
				why = line
			} else if !strings.Contains(why, line) {
				why += "; " + line
				break
			}
		}
	}
	return nil, why, nil
}

func nodeFix(s *spec.Spec, n spec.Node, c wire.Check) string {
	net := s.NetworkName()
	d := strings.ToLower(c.Detail)
	switch {
	case c.Name == "modules" || c.Name == "nic":
		return "the probe image lacks working virtio modules: `bootlab lab probe-image build`, then `bootlab lab down && bootlab lab up`"
	case c.Name == "dhcp", c.Name == "address", c.Name == "hostname":
		return fmt.Sprintf("the DHCP reservation for %s (%s, %s) in libvirt network %s (see `virsh net-dumpxml %s`): rebuild with `bootlab lab down && bootlab lab up`", n.Name, n.MAC, n.IP, net, net)
	case c.Name == "ignition-fwcfg":
		return fmt.Sprintf("the Ignition file %s passed through fw_cfg (domain %s): `bootlab lab up` rewrites it", labdir.Ignition(s, n), s.DomainName(n))
	case c.Name == "etcd member" && s.Rehearsal():
		return "a master's etcd joins the bootstrap's member (started by stage 07) once the master has its config (stage 12) and the cluster's API answers (stage 13 starts the bootstrap's): the etcd operator stand-in adds one learner at a time and promotes it when in sync; `bootlab stage status` names the next stage, `bootlab lab ssh bootstrap -- sudo crictl ps` shows whether the bootstrap's etcd runs"
	case c.Name == "ignition-fetch" && s.Rehearsal() && n.Role == spec.RoleMaster:
		return "masters wait for the MCS: run `bootlab stage run 12` (on a rehearsal lab the bootstrap MCS starts when stage 12 lands its pod; `bootlab stage status` names the next stage)"
	case c.Name == "ignition-fetch":
		switch {
		case strings.Contains(d, "unknown authority") || strings.Contains(d, "certificate"):
			return fmt.Sprintf("the CA in %s (ignition.security.tls.certificateAuthorities) does not sign the MCS certificate for api-int: `bootlab lab up` rewrites the pointer configs from %s", labdir.Ignition(s, n), filepath.Join(s.LabDir, "pki"))
		case strings.Contains(d, "no such host") || strings.Contains(d, "server misbehaving") || strings.Contains(d, "lookup"):
			return fmt.Sprintf("api-int.%s does not resolve on the lab network: check its DNS host in `virsh net-dumpxml %s`, or rebuild with `bootlab lab down && bootlab lab up`", s.Cluster.Domain(), net)
		case strings.Contains(d, "refusing to serve bootstrap configuration"):
			return "workers get /config/worker only from the masters' MCS: wait for the masters (the node retries), check `bootlab lab verify` on the masters"
		case strings.Contains(d, "connection refused") || strings.Contains(d, "timeout") || strings.Contains(d, "eof"):
			return fmt.Sprintf("nothing serves %s:22623 behind haproxy: is haproxy running and the bootstrap up? `bootlab lab status`", s.Network.APIAddress)
		}
		return fmt.Sprintf("see the node's console: `bootlab lab console %s`", n.Name)
	case strings.HasPrefix(c.Name, "dns "):
		return fmt.Sprintf("the DNS records of libvirt network %s (see `virsh net-dumpxml %s`): fix them with `virsh net-update %s ... dns-host`, or rebuild with `bootlab lab down && bootlab lab up`", net, net, net)
	case c.Name == "report":
		return fmt.Sprintf("`bootlab lab console %s`", n.Name)
	}
	return fmt.Sprintf("see the node's console: `bootlab lab console %s`", n.Name)
}
