// Command bootlab-probe is the /init of the probe lab's initramfs: a static
// agent that plays one node of an OpenShift bootstrap. It brings the NIC up
// with DHCP, reads its Ignition from QEMU fw_cfg, follows pointer configs to
// the Machine Config Server the way Ignition does, checks DNS, serves the
// node's part (bootstrap: MCS + API; masters: API, then MCS; ingress on the
// workers, or on the masters of a lab without workers) and writes a JSON
// report of every check to the serial console.
// It runs as PID 1 and never exits.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

func main() {
	// On a rehearsal bootstrap the agent is also sudo and the stand-ins
	// (standins.go).
	if code, ok := multicall(os.Args); ok {
		os.Exit(code)
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "bootlab-probe is the /init of bootlab's probe VMs and runs only as PID 1")
		os.Exit(2)
	}
	console := setupSystem()
	a := newAgent(console)
	a.run(context.Background())
	// PID 1 must never exit: the kernel would panic.
	for {
		time.Sleep(time.Hour)
	}
}

// consoleWriter serialises whole lines to the console, so reports and logs
// never interleave with each other.
type consoleWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *consoleWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})).With("src", "bootlab-probe")
}
