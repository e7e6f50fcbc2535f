package shims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
)

// crictlSays is how the crictl stand-in names itself on stderr.
const crictlSays = "crictl (bootlab rehearsal stand-in)"

// crictlMain plays crictl over what the kubelet stand-in runs: ps, pods,
// logs and inspect, with the flags the installer's gather and the
// bootstrap guide use (cri-tools cmd/crictl: container.go, sandbox.go,
// logs.go).
func (t *Tools) crictlMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, crictlSays+": only `crictl ps`, `pods`, `logs` and `inspect` are played")
		return 1
	}
	f, err := parseCrictlFlags(args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", crictlSays, args[0], err)
		return 1
	}
	pods, err := kubelet.LoadState(t.KubeletState)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "%s: the kubelet stand-in's state %s: %v\n", crictlSays, t.KubeletState, err)
		return 1
	}
	switch args[0] {
	case "ps":
		fmt.Fprintln(stderr, crictlSays+": the containers the kubelet stand-in runs")
		return crictlPs(pods, f, stdout, stderr)
	case "pods":
		fmt.Fprintln(stderr, crictlSays+": the static pods the kubelet stand-in runs")
		return crictlPods(pods, f, stdout, stderr)
	case "logs":
		fmt.Fprintln(stderr, crictlSays+": the container's log as the kubelet stand-in keeps it in /var/log/pods")
		return t.crictlLogs(pods, f, stdout, stderr)
	case "inspect":
		return crictlInspect(pods, f, stdout, stderr)
	}
	fmt.Fprintf(stderr, "%s: `crictl %s` is not played: only ps, pods, logs and inspect\n", crictlSays, args[0])
	return 1
}

// crictlFlags are the flags of the played commands.
type crictlFlags struct {
	all, quiet, latest, follow, timestamps bool
	output, name, pod                      string
	tail                                   int
	args                                   []string
}

// parseCrictlFlags reads flags before and after the arguments, as crictl
// takes them.
func parseCrictlFlags(args []string) (crictlFlags, error) {
	f := crictlFlags{tail: -1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "-a", "--all":
			f.all = true
		case "-q", "--quiet":
			f.quiet = true
		case "-l", "--latest":
			f.latest = true
		case "-f", "--follow":
			f.follow = true
		case "-t", "--timestamps":
			f.timestamps = true
		case "-o", "--output":
			f.output, err = value()
		case "--name":
			f.name, err = value()
		case "-p", "--pod":
			f.pod, err = value()
		case "--tail":
			var v string
			if v, err = value(); err == nil {
				f.tail, err = strconv.Atoi(v)
				if err != nil || f.tail < -1 {
					err = fmt.Errorf("--tail %q: a number of lines, or -1 for all", v)
				}
			}
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				return f, fmt.Errorf("flag %s is not played (played: -a, -q, -l, -o json|table, --name, --pod, -f, --tail N, -t)", name)
			}
			f.args = append(f.args, a)
		}
		if err != nil {
			return f, err
		}
	}
	if f.output != "" && f.output != "json" && f.output != "table" {
		return f, fmt.Errorf("-o %s is not played: json or table", f.output)
	}
	return f, nil
}

// containers are the pods that run (or ran) a container, most recent
// first, as ps filters them.
func containers(pods []kubelet.PodState, f crictlFlags) ([]kubelet.PodState, error) {
	var re *regexp.Regexp
	if f.name != "" {
		var err error
		if re, err = regexp.Compile(f.name); err != nil {
			return nil, fmt.Errorf("--name %q: %v", f.name, err)
		}
	}
	var out []kubelet.PodState
	for _, p := range pods {
		switch {
		case p.Container == "" || p.ID == "":
			continue // no container was made: a pod not run
		case !p.Running && !f.all && !f.latest:
		case re != nil && !re.MatchString(p.Container):
		case f.pod != "" && !strings.HasPrefix(p.PodID, f.pod):
		default:
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	if f.latest && len(out) > 1 {
		out = out[:1]
	}
	return out, nil
}

func crictlPs(pods []kubelet.PodState, f crictlFlags, stdout, stderr io.Writer) int {
	cs, err := containers(pods, f)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", crictlSays, err)
		return 1
	}
	listing{
		id: func(c kubelet.PodState) string { return c.ID },
		json: func(cs []kubelet.PodState) any {
			type meta struct {
				Name    string `json:"name"`
				Attempt int    `json:"attempt"`
			}
			type container struct {
				ID           string            `json:"id"`
				PodSandboxID string            `json:"podSandboxId"`
				Metadata     meta              `json:"metadata"`
				Image        map[string]string `json:"image"`
				ImageRef     string            `json:"imageRef"`
				State        string            `json:"state"`
				CreatedAt    string            `json:"createdAt"`
				Labels       map[string]string `json:"labels"`
			}
			out := struct {
				Containers []container `json:"containers"`
			}{Containers: []container{}}
			for _, c := range cs {
				out.Containers = append(out.Containers, container{ID: c.ID, PodSandboxID: c.PodID, Metadata: meta{c.Container, c.Attempt},
					Image: map[string]string{"image": c.Image}, ImageRef: c.Image, State: containerState(c),
					CreatedAt: strconv.FormatInt(c.Created.UnixNano(), 10), Labels: criLabels(c)})
			}
			return out
		},
		header: fmt.Sprintf("%-13s  %-50s  %-20s  %-8s  %-24s  %-7s  %-13s  %s", "CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"),
		row: func(c kubelet.PodState) string {
			state := "Running"
			if !c.Running {
				state = "Exited"
			}
			return fmt.Sprintf("%-13s  %-50s  %-20s  %-8s  %-24s  %-7d  %-13s  %s", short(c.ID), trimTo(c.Image, 50), c.Created.Format("2006-01-02T15:04:05"), state, c.Container, c.Attempt, short(c.PodID), c.Name)
		},
	}.print(stdout, f, cs)
	return 0
}

func crictlPods(pods []kubelet.PodState, f crictlFlags, stdout, stderr io.Writer) int {
	var re *regexp.Regexp
	if f.name != "" {
		var err error
		if re, err = regexp.Compile(f.name); err != nil {
			fmt.Fprintf(stderr, "%s: --name %q: %v\n", crictlSays, f.name, err)
			return 1
		}
	}
	var ps []kubelet.PodState
	for _, p := range pods {
		if p.Name != "" && (re == nil || re.MatchString(p.Name)) {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Created.After(ps[j].Created) })
	if f.latest && len(ps) > 1 {
		ps = ps[:1]
	}
	listing{
		id: func(p kubelet.PodState) string { return p.PodID },
		json: func(ps []kubelet.PodState) any {
			type item struct {
				ID        string            `json:"id"`
				Metadata  map[string]any    `json:"metadata"`
				State     string            `json:"state"`
				CreatedAt string            `json:"createdAt"`
				Labels    map[string]string `json:"labels"`
			}
			out := struct {
				Items []item `json:"items"`
			}{Items: []item{}}
			for _, p := range ps {
				state := "SANDBOX_NOTREADY"
				if p.Running {
					state = "SANDBOX_READY"
				}
				out.Items = append(out.Items, item{ID: p.PodID, State: state, CreatedAt: strconv.FormatInt(p.Created.UnixNano(), 10),
					Metadata: map[string]any{"name": p.Name, "uid": p.UID, "namespace": p.Namespace, "attempt": 0}, Labels: criLabels(p)})
			}
			return out
		},
		header: fmt.Sprintf("%-13s  %-20s  %-8s  %-36s  %-32s  %s", "POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT"),
		row: func(p kubelet.PodState) string {
			state := "Ready"
			if !p.Running {
				state = "NotReady"
			}
			return fmt.Sprintf("%-13s  %-20s  %-8s  %-36s  %-32s  %d", short(p.PodID), p.Created.Format("2006-01-02T15:04:05"), state, p.Name, p.Namespace, 0)
		},
	}.print(stdout, f, ps)
	return 0
}

// listing is what crictl ps and crictl pods print of what they list: the
// ids alone (-q), crictl's JSON document (-o json), or its table.
type listing struct {
	id     func(kubelet.PodState) string
	json   func([]kubelet.PodState) any
	header string
	row    func(kubelet.PodState) string
}

func (l listing) print(w io.Writer, f crictlFlags, items []kubelet.PodState) {
	switch {
	case f.quiet:
		for _, it := range items {
			fmt.Fprintln(w, l.id(it))
		}
	case f.output == "json":
		writeJSON(w, l.json(items))
	default:
		fmt.Fprintln(w, l.header)
		for _, it := range items {
			fmt.Fprintln(w, l.row(it))
		}
	}
}

// findContainer is the container whose id starts with ref, or (the
// stand-in's kindness: crictl takes ids only) whose name is ref, the most
// recent.
func findContainer(pods []kubelet.PodState, ref string) (kubelet.PodState, error) {
	cs, _ := containers(pods, crictlFlags{all: true})
	var byID []kubelet.PodState
	for _, c := range cs {
		if strings.HasPrefix(c.ID, ref) {
			byID = append(byID, c)
		}
	}
	switch {
	case len(byID) == 1:
		return byID[0], nil
	case len(byID) > 1:
		return kubelet.PodState{}, fmt.Errorf("container id %q is the start of %d containers' ids: give more of it", ref, len(byID))
	}
	for _, c := range cs {
		if c.Container == ref {
			return c, nil
		}
	}
	return kubelet.PodState{}, fmt.Errorf("no container %q: no id starts with it and none is named so (crictl ps -a lists them)", ref)
}

func (t *Tools) crictlLogs(pods []kubelet.PodState, f crictlFlags, stdout, stderr io.Writer) int {
	if len(f.args) != 1 {
		fmt.Fprintln(stderr, "usage: crictl logs [-f] [--tail N] [-t] CONTAINER-ID")
		return 1
	}
	c, err := findContainer(pods, f.args[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", crictlSays, err)
		return 1
	}
	if c.LogPath == "" {
		fmt.Fprintf(stderr, "%s: container %s (%s) keeps no log: %s\n", crictlSays, short(c.ID), c.Container, c.Detail)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	running := func() bool {
		now, err := kubelet.LoadState(t.KubeletState)
		if err != nil {
			return false
		}
		for _, p := range now {
			if p.ID == c.ID {
				return p.Running
			}
		}
		return false
	}
	if err := kubelet.ReadLog(ctx, c.LogPath, kubelet.LogOptions{Tail: f.tail, Follow: f.follow, Timestamps: f.timestamps, Running: running}, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "%s: the log of %s: %v\n", crictlSays, short(c.ID), err)
		return 1
	}
	return 0
}

// crictlInspect prints the containers' status as crictl inspect does
// (its -o json, the default): status and info.
func crictlInspect(pods []kubelet.PodState, f crictlFlags, stdout, stderr io.Writer) int {
	if len(f.args) == 0 {
		fmt.Fprintln(stderr, "usage: crictl inspect CONTAINER-ID...")
		return 1
	}
	for _, ref := range f.args {
		c, err := findContainer(pods, ref)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", crictlSays, err)
			return 1
		}
		ts := func(t time.Time) string {
			if t.IsZero() {
				return "1970-01-01T00:00:00Z"
			}
			return t.UTC().Format(time.RFC3339Nano)
		}
		status := map[string]any{
			"id": c.ID, "metadata": map[string]any{"name": c.Container, "attempt": c.Attempt}, "state": containerState(c),
			"createdAt": ts(c.Created), "startedAt": ts(c.Started), "finishedAt": ts(c.Finished), "exitCode": c.ExitCode,
			"image": map[string]string{"image": c.Image}, "imageRef": c.Image, "reason": reason(c), "message": c.Detail,
			"labels": criLabels(c), "logPath": c.LogPath,
		}
		info := map[string]any{"sandboxID": c.PodID, "pid": c.PID, "runtimeSpec": map[string]any{"annotations": map[string]string{"bootlab.io/stand-in": crictlSays + ": " + c.File}}}
		writeJSON(stdout, map[string]any{"status": status, "info": info})
	}
	return 0
}

func containerState(c kubelet.PodState) string {
	if c.Running {
		return "CONTAINER_RUNNING"
	}
	return "CONTAINER_EXITED"
}

func reason(c kubelet.PodState) string {
	switch {
	case c.Running:
		return ""
	case c.ExitCode == 0:
		return "Completed"
	}
	return "Error"
}

// criLabels are the labels the kubelet puts on a container and its sandbox.
func criLabels(c kubelet.PodState) map[string]string {
	l := map[string]string{"io.kubernetes.pod.name": c.Name, "io.kubernetes.pod.namespace": c.Namespace, "io.kubernetes.pod.uid": c.UID}
	if c.Container != "" {
		l["io.kubernetes.container.name"] = c.Container
	}
	return l
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// short is an id as crictl's tables show it: its first 13 digits.
func short(id string) string { return id[:min(13, len(id))] }

func trimTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
