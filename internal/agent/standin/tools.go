package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
)

// OcMain plays `oc adm release info` from the release metadata, and `oc
// patch clusterversion` against the cluster API.
func (t *Tools) OcMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "patch" {
		return ocPatch(args[1:], stdout, stderr)
	}
	if len(args) < 3 || args[0] != "adm" || args[1] != "release" || args[2] != "info" {
		fmt.Fprintln(stderr, "oc (bootlab rehearsal stand-in): only `oc adm release info` and `oc patch clusterversion` are played on the rehearsal bootstrap")
		return 1
	}
	rel, err := t.release()
	if err != nil {
		fmt.Fprintln(stderr, "oc (bootlab rehearsal stand-in):", err)
		return 1
	}
	fmt.Fprintf(stderr, "oc (bootlab rehearsal stand-in): release info of %s from %s\n", rel.Image, t.ReleasePath)
	output := ""
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" && i+1 < len(args):
			output, i = args[i+1], i+1
		case strings.HasPrefix(a, "-o="), strings.HasPrefix(a, "--output="):
			_, output, _ = strings.Cut(a, "=")
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			output = a[2:]
		}
	}
	switch output {
	case "jsonpath={.metadata.version}":
		fmt.Fprint(stdout, rel.Version)
	case "jsonpath={.displayVersions.kubernetes.Version}":
		fmt.Fprint(stdout, rel.KubernetesVersion)
	case "json":
		info := map[string]any{
			"image":           rel.Image,
			"metadata":        map[string]any{"version": rel.Version},
			"displayVersions": map[string]any{"kubernetes": map[string]any{"Version": rel.KubernetesVersion}},
			"references":      rel.Components,
		}
		data, _ := json.MarshalIndent(info, "", "  ")
		fmt.Fprintln(stdout, string(data))
	case "":
		fmt.Fprintf(stdout, "Name:      %s\nPull From: %s\n\nComponent Versions:\n  kubernetes %s\n\nImages:\n", rel.Version, rel.Image, rel.KubernetesVersion)
		var names []string
		for n := range rel.Components {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(stdout, "  %-42s %s\n", n, rel.Components[n])
		}
	default:
		fmt.Fprintf(stderr, "oc (bootlab rehearsal stand-in): -o %s is not played (jsonpath={.metadata.version}, jsonpath={.displayVersions.kubernetes.Version}, json)\n", output)
		return 1
	}
	return 0
}

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

// digMain is a small dig: real A-record queries to the nameserver of
// /etc/resolv.conf (or @SERVER), printed as `dig +short` prints them, for
// the resolve_url checks of the stage scripts. Debian's dig would bring
// bind's libraries and ICU into the initrd; this one is the agent.
func digMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dig (bootlab's small dig on the rehearsal bootstrap: A records, +short output)")
	server, short := "", false
	var names []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "@"):
			server = a[1:]
		case a == "+short":
			short = true
		case strings.HasPrefix(a, "+"), strings.HasPrefix(a, "-"), a == "A", a == "IN":
		default:
			names = append(names, a)
		}
	}
	if server == "" {
		data, _ := os.ReadFile("/etc/resolv.conf")
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
				server = f[1]
				break
			}
		}
	}
	if server == "" || len(names) == 0 {
		fmt.Fprintln(stderr, "usage: dig [@SERVER] NAME [+short] (and a nameserver in /etc/resolv.conf)")
		return 1
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(server, "53"))
	}}
	for _, n := range names {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		addrs, err := r.LookupIP(ctx, "ip4", n)
		cancel()
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsTimeout {
			fmt.Fprintf(stdout, ";; connection timed out; no servers could be reached\n")
			return 9
		}
		for _, ip := range addrs {
			if short {
				fmt.Fprintln(stdout, ip)
			} else {
				fmt.Fprintf(stdout, "%s.\t0\tIN\tA\t%s\n", strings.TrimSuffix(n, "."), ip)
			}
		}
	}
	return 0
}
