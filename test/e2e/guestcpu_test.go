//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/internal/procstat"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// guestCPU is the CPU time, in seconds, each running node of the lab's
// QEMU has used (user and system, every thread of the process), read from
// /proc through the pid file libvirt keeps for a local domain. A node
// whose time cannot be read is missing from the map, and why is in the
// second result.
func guestCPU(s *spec.Spec) (map[string]float64, []string) {
	cpu := map[string]float64{}
	var missing []string
	for _, n := range s.Nodes {
		sec, err := qemuCPU(s.DomainName(n))
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		cpu[n.Name] = sec
	}
	return cpu, missing
}

// qemuCPU reads utime and stime of the domain's QEMU (in clock ticks,
// 100 a second on Linux).
func qemuCPU(domain string) (float64, error) {
	pid, err := os.ReadFile(filepath.Join("/run/libvirt/qemu", domain+".pid"))
	if err != nil {
		return 0, err
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "stat"))
	if err != nil {
		return 0, err
	}
	st, err := procstat.Parse(stat)
	if err != nil {
		return 0, fmt.Errorf("/proc stat of %s's QEMU: %w: %q", domain, err, stat)
	}
	return float64(st.Ticks()) / procstat.ClockTicks, nil
}

// guestCPULedger splits a test's guest CPU into its phases: each phase is
// what the nodes' QEMUs used since the one before, by role, for a BENCH
// line that names where a run's CPU went (the e2e is bound by it on two
// emulated cores). A node whose QEMU started again inside a phase (a
// checkpoint restored) counts from its new start.
type guestCPULedger struct {
	s     *spec.Spec
	last  map[string]float64
	parts []string
}

func newGuestCPULedger(s *spec.Spec) *guestCPULedger {
	l := &guestCPULedger{s: s}
	l.last, _ = guestCPU(s)
	return l
}

// phase closes the phase called name.
func (l *guestCPULedger) phase(name string) {
	now, missing := guestCPU(l.s)
	var byRole [3]float64
	var masters []string
	for _, n := range l.s.Nodes {
		d, ok := now[n.Name]
		if !ok {
			continue
		}
		if prev := l.last[n.Name]; d >= prev {
			d -= prev
		}
		switch n.Role {
		case spec.RoleBootstrap:
			byRole[0] += d
		case spec.RoleMaster:
			byRole[1] += d
			masters = append(masters, strconv.FormatFloat(d, 'f', 0, 64))
		default:
			byRole[2] += d
		}
	}
	part := fmt.Sprintf("%s: bootstrap %.0f, masters %.0f (%s), workers %.0f", name, byRole[0], byRole[1], strings.Join(masters, "+"), byRole[2])
	if len(missing) > 0 {
		part += " (unread: " + strings.Join(missing, "; ") + ")"
	}
	l.parts = append(l.parts, part)
	l.last = now
}

// log writes the BENCH line of every phase closed.
func (l *guestCPULedger) log(t *testing.T, what string) {
	t.Helper()
	t.Logf("BENCH %s guest CPU, seconds of its QEMUs (user+system) by phase: %s", what, strings.Join(l.parts, "; "))
}

// logNodeCPU writes a BENCH line for each node of the lab: its CPU by program since boot, as
// its agent last reported it on the console (every 15 s).
func logNodeCPU(t *testing.T, what string, s *spec.Spec) {
	t.Helper()
	for _, n := range s.Nodes {
		f, err := os.Open(labdir.ConsoleLog(s, n))
		if err != nil {
			t.Logf("BENCH %s %s CPU by program: %v", what, n.Name, err)
			continue
		}
		rep, _ := wire.ParseConsole(f)
		f.Close()
		sum := "no report with CPU yet"
		if rep != nil && len(rep.CPU) > 0 {
			sum = rep.CPUSummary()
		}
		t.Logf("BENCH %s %s CPU by program since boot: %s", what, n.Name, sum)
	}
}
