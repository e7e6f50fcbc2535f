package shims

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
)

// crictlMain lists what the kubelet stand-in runs.
func (t *Tools) crictlMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "ps" && args[0] != "pods") {
		fmt.Fprintln(stderr, "crictl (bootlab rehearsal stand-in): only `crictl ps` and `crictl pods` are played")
		return 1
	}
	fmt.Fprintln(stderr, "crictl (bootlab rehearsal stand-in): the static pods the kubelet stand-in runs")
	pods, err := kubelet.LoadState(t.KubeletState)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stderr, "crictl:", err)
		return 1
	}
	all := len(args) > 1 && (args[1] == "-a" || args[1] == "--all")
	if args[0] == "pods" {
		fmt.Fprintf(stdout, "%-14s %-20s %-8s %-36s %s\n", "POD ID", "CREATED", "STATE", "NAME", "NAMESPACE")
	} else {
		fmt.Fprintf(stdout, "%-14s %-50s %-20s %-8s %-24s %s\n", "CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "POD")
	}
	for _, p := range pods {
		if !p.Running && !all {
			continue
		}
		state := "Ready"
		if args[0] == "ps" {
			state = "Running"
		}
		if !p.Running {
			state = "Exited"
		}
		if args[0] == "pods" {
			fmt.Fprintf(stdout, "%-14s %-20s %-8s %-36s %s\n", p.ID, p.Started.Format("2006-01-02T15:04:05"), state, p.Name, p.Namespace)
		} else {
			fmt.Fprintf(stdout, "%-14s %-50s %-20s %-8s %-24s %s\n", p.ID, trimTo(p.Image, 50), p.Started.Format("2006-01-02T15:04:05"), state, p.Container, p.Name)
		}
	}
	return 0
}

func trimTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
