package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/bootlab/bootlab/internal/kube"
)

// apiClient is a client of the API kubeconfig names, as oc reads it: the
// server, the CA and the client certificate. A kubeconfig that names
// api.<domain> without a tls-server-name is checked against api-int.<domain>,
// as the stand-ins always have: the lab's serving certificates name both.
func apiClient(kubeconfig string) (*kube.Client, error) {
	cfg, err := kube.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if u, err := url.Parse(cfg.Server); err == nil && cfg.ServerName == "" {
		if rest, ok := strings.CutPrefix(u.Hostname(), "api."); ok {
			cfg.ServerName = "api-int." + rest
		}
	}
	return kube.NewClient(cfg)
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
	k, err := apiClient(kubeconfig)
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
