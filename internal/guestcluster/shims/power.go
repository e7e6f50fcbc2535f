package shims

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Power is what a reboot, poweroff or halt asks of the node's init.
type Power string

// The power actions.
const (
	Reboot   Power = "reboot"
	PowerOff Power = "poweroff"
	Halt     Power = "halt"
)

// sigRTMin is the first real-time signal as glibc numbers them (the
// kernel's 32 and 33 are glibc's own), the base systemd counts from.
const sigRTMin = syscall.Signal(34)

// PowerSignals are the signals the node's init takes a power action by,
// systemd's own (systemd(1), SIGNALS: SIGRTMIN+3 halts, SIGRTMIN+4 powers
// off, SIGRTMIN+5 reboots), so the stand-ins ask the agent, the node's
// PID 1, as systemctl asks systemd.
var PowerSignals = map[syscall.Signal]Power{sigRTMin + 3: Halt, sigRTMin + 4: PowerOff, sigRTMin + 5: Reboot}

// powerSignal is the signal of action p.
func powerSignal(p Power) syscall.Signal {
	for s, q := range PowerSignals {
		if q == p {
			return s
		}
	}
	return 0
}

// standIn is how the power stand-ins say what they are.
const standIn = "(bootlab rehearsal stand-in)"

// Signaller sends the node's init a signal (syscall.Kill(1, s) on a node).
type Signaller func(s syscall.Signal) error

// powerMain plays reboot, poweroff, halt, shutdown and systemctl's power
// verbs: it checks the arguments, then asks PID 1 for the action, which
// stops the static pods, syncs and unmounts the node disk, and reboots.
func powerMain(name string, args []string, stdout, stderr io.Writer, signal Signaller) int {
	p, msg := parsePower(name, args)
	if msg != "" {
		fmt.Fprintf(stderr, "%s %s: %s\n", name, standIn, msg)
		return 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(stderr, "%s %s: must be root: sudo %s\n", name, standIn, name)
		return 1
	}
	fmt.Fprintf(stderr, "%s %s: the agent (PID 1) stops the static pods, syncs the node disk and does the %s\n", name, standIn, p)
	if err := signal(powerSignal(p)); err != nil {
		fmt.Fprintf(stderr, "%s: ask PID 1: %v\n", name, err)
		return 1
	}
	return 0
}

// parsePower is the action a command line asks for, or why it is not
// played. The options that change nothing here (--no-block, -f, --force,
// --no-wall) are taken and ignored; shutdown takes `now` or `+0` only.
func parsePower(name string, args []string) (Power, string) {
	var rest []string
	for _, a := range args {
		switch a {
		case "--no-block", "--no-wall", "-f", "--force", "-q", "--quiet":
		default:
			rest = append(rest, a)
		}
	}
	switch name {
	case "reboot", "poweroff", "halt":
		if len(rest) > 0 {
			return "", fmt.Sprintf("%s is not supported: `%s` alone is", rest[0], name)
		}
		return Power(name), ""
	case "systemctl":
		if len(rest) == 1 {
			switch rest[0] {
			case "reboot", "poweroff", "halt":
				return Power(rest[0]), ""
			}
		}
		return "", "only `systemctl reboot`, `systemctl poweroff` and `systemctl halt`, and start, stop, restart, status and is-active of the units the agent runs (approve-csr.service, progress.service) are played on this node (it has no systemd)"
	case "shutdown":
		return parseShutdown(rest)
	}
	return "", "not a power command"
}

// parseShutdown reads shutdown's options as systemd's shutdown does:
// -r reboots, -H halts, -P or -h (the default) powers off, at `now` or
// `+0` only.
func parseShutdown(args []string) (Power, string) {
	p := PowerOff
	when := "now"
	for _, a := range args {
		switch a {
		case "-r", "--reboot":
			p = Reboot
		case "-H", "--halt":
			p = Halt
		case "-P", "--poweroff", "-h":
		case "now", "+0":
		default:
			if a != "" && a[0] == '-' {
				return "", fmt.Sprintf("option %s is not supported (-r, -h, -P, -H and `now` are)", a)
			}
			when = a
		}
	}
	if when != "now" {
		return "", fmt.Sprintf("only `now` is supported, not %q", when)
	}
	return p, ""
}
