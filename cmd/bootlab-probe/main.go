// Command bootlab-probe is the /init of the probe lab's initramfs: a static
// agent that plays one node of an OpenShift bootstrap. It brings the NIC up
// with DHCP, reads its Ignition from QEMU fw_cfg, follows pointer configs to
// the Machine Config Server the way Ignition does, checks DNS, serves the
// node's part (bootstrap: MCS + API; masters: API, then MCS; ingress on the
// workers, or on the masters of a lab without workers) and writes a JSON
// report of every check to the serial console.
// It runs as PID 1 and never exits. The agent lives in internal/agent/...;
// this file wires it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/bootlab/bootlab/internal/agent"
	"github.com/bootlab/bootlab/internal/guestcluster/shims"
)

func main() {
	// On a rehearsal bootstrap the agent is also sudo and the stand-ins
	// (internal/guestcluster/shims), by the name it is started as.
	if code, ok := shims.New().Multicall(os.Args); ok {
		os.Exit(code)
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "bootlab-probe is the /init of bootlab's probe VMs and runs only as PID 1")
		os.Exit(2)
	}
	console := agent.SetupSystem()
	agent.AwaitSavedStart(console)
	a := agent.New(console)
	go a.WatchClock(context.Background())
	a.Run(context.Background())
	// PID 1 must never exit: the kernel would panic.
	for {
		time.Sleep(time.Hour)
	}
}
