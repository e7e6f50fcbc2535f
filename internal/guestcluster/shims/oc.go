package shims

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/internal/kube"
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

// ocPatch plays `oc patch clusterversion[.config.openshift.io] NAME
// --type=merge --patch-file=F|--patch=P --kubeconfig=K`.
func ocPatch(args []string, stdout, stderr io.Writer) int {
	say := func(format string, a ...any) {
		fmt.Fprintf(stderr, "oc (bootlab rehearsal stand-in): "+format+"\n", a...)
	}
	var pos []string
	opts := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok && i+1 < len(args) {
			v, i = args[i+1], i+1
		}
		opts[k] = v
	}
	if len(pos) != 2 || (pos[0] != "clusterversion" && pos[0] != "clusterversion.config.openshift.io" && pos[0] != "clusterversions") {
		say("only `oc patch clusterversion NAME` is played on the rehearsal bootstrap (stage 14)")
		return 1
	}
	if t := opts["type"]; t != "merge" {
		say("--type=%s is not played: stage 14 sends a merge patch (--type=merge)", t)
		return 1
	}
	patch := []byte(opts["patch"])
	if f := opts["patch-file"]; f != "" {
		var err error
		if patch, err = os.ReadFile(f); err != nil {
			say("%v", err)
			return 1
		}
	}
	if !json.Valid(patch) {
		say("the patch is not JSON")
		return 1
	}
	kubeconfig := opts["kubeconfig"]
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	cfg, err := kube.LoadKubeconfig(kubeconfig)
	if err != nil {
		say("%v", err)
		return 1
	}
	k, err := kube.NewClient(cfg)
	if err != nil {
		say("%v", err)
		return 1
	}
	path := "/apis/config.openshift.io/v1/clusterversions/" + pos[1]
	if err := k.Patch(context.Background(), path, json.RawMessage(patch), nil); err != nil {
		fmt.Fprintf(stderr, "Error from server: %v\n", err)
		return 1
	}
	say("PATCH %s%s answered by the kube-apiserver", k.Server(), path)
	fmt.Fprintf(stdout, "clusterversion.config.openshift.io/%s patched\n", pos[1])
	return 0
}
