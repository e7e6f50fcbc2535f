// Package hostdns lets the host resolve a lab's cluster domain (api.<c>.<b>,
// *.apps...) through the lab network's dnsmasq, the split-DNS way: only that
// domain goes to the lab, per link with systemd-resolved or per domain with
// NetworkManager's dnsmasq. It never rewrites the host's global resolver
// (/etc/resolv.conf). Setup returns a record string that Undo reverses
// exactly; State.HostDNS keeps it between `lab up` and `lab down`.
package hostdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// fileHeader starts the NetworkManager drop-in bootlab writes.
const fileHeader = "# Written by bootlab for lab "

// DefaultNMDnsmasqDir is NetworkManager's dnsmasq drop-in directory.
const DefaultNMDnsmasqDir = "/etc/NetworkManager/dnsmasq.d"

// Host is the host's resolver configuration tools. Run is the command
// runner (injectable for tests).
type Host struct {
	Run          func(ctx context.Context, name string, args ...string) (string, error)
	NMDnsmasqDir string
	// LinkExists says whether a network interface exists (nil: assume it does).
	LinkExists func(name string) bool
}

// Default returns a Host that runs real commands.
func Default() *Host {
	return &Host{Run: runCommand, NMDnsmasqDir: DefaultNMDnsmasqDir, LinkExists: func(name string) bool {
		_, err := net.InterfaceByName(name)
		return err == nil
	}}
}

func runCommand(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("`%s %s`: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ManualStepError says neither systemd-resolved nor NetworkManager's
// dnsmasq runs here: Steps tells the user what to do by hand. Callers
// print it and carry on (the lab works; only host-side names do not).
type ManualStepError struct {
	Steps string
}

func (e *ManualStepError) Error() string {
	return "the host runs neither systemd-resolved nor NetworkManager with dnsmasq, so bootlab did not set up host name resolution for the lab; " + e.Steps
}

// ManualSteps is what to do by hand for spec s.
func ManualSteps(s *spec.Spec) string {
	d, gw := s.Cluster.Domain(), s.Network.Gateway
	return fmt.Sprintf("to resolve *.%s from this host, send that domain to %s: with systemd-resolved `resolvectl dns %s %s && resolvectl domain %s '~%s'`; with NetworkManager's dnsmasq put `server=/%s/%s` in %s/bootlab-%s.conf and `nmcli general reload dns-full`; with a local dnsmasq add `server=/%s/%s`",
		d, gw, s.Network.Bridge, gw, s.Network.Bridge, d, d, gw, DefaultNMDnsmasqDir, s.Name, d, gw)
}

// Setup makes the host resolve the cluster domain of s through the lab's
// dnsmasq, with the default Host.
func Setup(ctx context.Context, s *spec.Spec) (labdir.HostDNS, error) { return Default().Setup(ctx, s) }

// Undo reverses what Setup recorded, with the default Host.
func Undo(ctx context.Context, record labdir.HostDNS) error { return Default().Undo(ctx, record) }

// Setup chooses by what the host runs: systemd-resolved (per-link DNS and
// a routing-only domain on the lab bridge), else NetworkManager's dnsmasq
// (a drop-in file with server=/<domain>/<gateway> and a reload), else a
// *ManualStepError. It returns the record Undo takes.
func (h *Host) Setup(ctx context.Context, s *spec.Spec) (labdir.HostDNS, error) {
	if s.Network.Bridge == "" || s.Network.Gateway == "" {
		return labdir.HostDNS{}, errors.New("network.bridge and network.gateway must be set (run Defaults first)")
	}
	domain := s.Cluster.Domain()
	if h.resolvedRunning(ctx) {
		if _, err := h.Run(ctx, "resolvectl", "dns", s.Network.Bridge, s.Network.Gateway); err != nil {
			return labdir.HostDNS{}, fmt.Errorf("point %s's DNS at the lab: %w", s.Network.Bridge, err)
		}
		if _, err := h.Run(ctx, "resolvectl", "domain", s.Network.Bridge, "~"+domain); err != nil {
			h.Run(ctx, "resolvectl", "revert", s.Network.Bridge)
			return labdir.HostDNS{}, fmt.Errorf("route %s to %s: %w", domain, s.Network.Bridge, err)
		}
		return labdir.HostDNS{Via: labdir.HostDNSResolved, Target: s.Network.Bridge}, nil
	}
	if h.nmDnsmasqRunning(ctx) {
		file := filepath.Join(h.NMDnsmasqDir, "bootlab-"+s.Name+".conf")
		body := fmt.Sprintf("%s%s: `bootlab lab down` removes it.\nserver=/%s/%s\n", fileHeader, s.Name, domain, s.Network.Gateway)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			return labdir.HostDNS{}, fmt.Errorf("write %s: %w", file, err)
		}
		if _, err := h.Run(ctx, "nmcli", "general", "reload", "dns-full"); err != nil {
			os.Remove(file)
			return labdir.HostDNS{}, fmt.Errorf("reload NetworkManager's dnsmasq: %w", err)
		}
		return labdir.HostDNS{Via: labdir.HostDNSNetworkManager, Target: file}, nil
	}
	return labdir.HostDNS{}, &ManualStepError{Steps: ManualSteps(s)}
}

// Undo reverses a Setup record: `resolvectl revert <link>`, or removing
// bootlab's NetworkManager drop-in (only a file bootlab wrote) and a
// reload. An empty record does nothing.
func (h *Host) Undo(ctx context.Context, record labdir.HostDNS) error {
	switch {
	case record.IsZero():
		return nil
	case record.Via == labdir.HostDNSResolved:
		link := record.Target
		if !h.resolvedRunning(ctx) {
			return nil // resolved's per-link settings died with it
		}
		if h.LinkExists != nil && !h.LinkExists(link) {
			return nil // the bridge is gone, and its per-link settings with it
		}
		if _, err := h.Run(ctx, "resolvectl", "revert", link); err != nil {
			return fmt.Errorf("revert host DNS on %s: %w", link, err)
		}
		return nil
	case record.Via == labdir.HostDNSNetworkManager:
		file := record.Target
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !strings.HasPrefix(filepath.Base(file), "bootlab-") || !strings.HasPrefix(string(data), fileHeader) {
			return fmt.Errorf("%s was not written by bootlab: leaving it alone", file)
		}
		if err := os.Remove(file); err != nil {
			return err
		}
		if _, err := h.Run(ctx, "nmcli", "general", "reload", "dns-full"); err != nil {
			return fmt.Errorf("reload NetworkManager's dnsmasq: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unknown host DNS record %q in the lab state", record)
}

// resolvedRunning: `resolvectl status` answers only when systemd-resolved runs.
func (h *Host) resolvedRunning(ctx context.Context) bool {
	_, err := h.Run(ctx, "resolvectl", "status")
	return err == nil
}

// nmDnsmasqRunning: NetworkManager runs and its dns plugin is dnsmasq.
func (h *Host) nmDnsmasqRunning(ctx context.Context) bool {
	out, err := h.Run(ctx, "nmcli", "-t", "-f", "RUNNING", "general")
	if err != nil || strings.TrimSpace(out) != "running" {
		return false
	}
	cfg, err := h.Run(ctx, "NetworkManager", "--print-config")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(cfg, "\n") {
		if strings.ReplaceAll(strings.TrimSpace(line), " ", "") == "dns=dnsmasq" {
			if fi, err := os.Stat(h.NMDnsmasqDir); err == nil && fi.IsDir() {
				return true
			}
		}
	}
	return false
}
