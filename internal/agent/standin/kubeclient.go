package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

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

// etcdOperatorPath is the API path of the etcd operator's resource (Etcd
// "cluster"), which wait-for-ceo reads.
const etcdOperatorPath = "/apis/operator.openshift.io/v1/etcds/cluster"

// condition is an operator status condition, as wait-for-ceo reads it.
type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// WaitForCEO plays `cluster-etcd-operator wait-for-ceo`: it watches the
// etcd operator's status through the API until the bootstrap member is
// removed.
func (t *Tools) WaitForCEO(f map[string]string, stdout, stderr io.Writer) error {
	k, err := apiClient(f["kubeconfig"])
	if err != nil {
		return err
	}
	deadline := time.Now().Add(t.CEOWait)
	last := ""
	for {
		var etcd struct {
			Status struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		}
		err := k.Do(context.Background(), http.MethodGet, etcdOperatorPath, nil, &etcd)
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			for _, c := range etcd.Status.Conditions {
				if c.Type == "EtcdBootstrapMemberRemoved" {
					if c.Status == "True" {
						fmt.Fprintf(stdout, "Cluster etcd operator bootstrapped successfully (%s)\n", c.Message)
						return nil
					}
					msg = c.Message
				}
			}
		}
		if msg != last {
			fmt.Fprintf(stdout, "Still waiting for the cluster-etcd-operator to bootstrap: %s\n", msg)
			last = msg
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the etcd operator did not remove the bootstrap member in %s: %s", t.CEOWait, last)
		}
		time.Sleep(t.CEOPoll)
	}
}
