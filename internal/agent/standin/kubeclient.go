package standin

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/wire"
)

// A small client of the cluster API for the oc and wait-for-ceo stand-ins:
// the kubeconfig's server, CA and client certificate, as oc reads them.

type kubeClient struct {
	server string
	http   *http.Client
}

func newKubeClient(kubeconfig string) (*kubeClient, error) {
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
				CA     string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Cert string `json:"client-certificate-data"`
				Key  string `json:"client-key-data"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("parse kubeconfig %s: %w", kubeconfig, err)
	}
	if len(kc.Clusters) == 0 || len(kc.Users) == 0 {
		return nil, fmt.Errorf("kubeconfig %s: want one cluster and one user", kubeconfig)
	}
	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(dec(kc.Clusters[0].Cluster.CA)) {
		return nil, fmt.Errorf("kubeconfig %s: no certificate-authority-data", kubeconfig)
	}
	cert, err := tls.X509KeyPair(dec(kc.Users[0].User.Cert), dec(kc.Users[0].User.Key))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: client certificate: %w", kubeconfig, err)
	}
	server := kc.Clusters[0].Cluster.Server
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("kubeconfig %s: server %q is not a URL", kubeconfig, server)
	}
	// The lab's API stand-ins serve the api-int certificate for api too
	// (a real cluster's serving certificates name both): the chain is
	// checked against the kubeconfig's CA, the name against api-int.
	serverName := u.Hostname()
	if rest, ok := strings.CutPrefix(serverName, "api."); ok {
		serverName = "api-int." + rest
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: serverName, MinVersion: tls.VersionTLS12}}
	return &kubeClient{server: strings.TrimSuffix(server, "/"), http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

// do sends a request and decodes a JSON answer; it returns the answering
// node (the stand-ins name themselves).
func (k *kubeClient) do(method, path, contentType string, body []byte, out any) (string, error) {
	req, err := http.NewRequest(method, k.server+path, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	node := resp.Header.Get(wire.NodeHeader)
	if resp.StatusCode/100 != 2 {
		var st struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &st)
		if st.Message == "" {
			st.Message = strings.TrimSpace(string(data))
		}
		return node, fmt.Errorf("%s %s: %s: %s", method, k.server+path, resp.Status, st.Message)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return node, fmt.Errorf("%s %s: %w", method, k.server+path, err)
		}
	}
	return node, nil
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
		say("--type=%s is not played: the API stand-in takes merge patches (--type=merge)", t)
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
	k, err := newKubeClient(kubeconfig)
	if err != nil {
		say("%v", err)
		return 1
	}
	node, err := k.do(http.MethodPatch, "/apis/config.openshift.io/v1/clusterversions/"+pos[1], "application/merge-patch+json", patch, nil)
	if err != nil {
		fmt.Fprintf(stderr, "Error from server: %v\n", err)
		return 1
	}
	if node == "" {
		say("PATCH %s/apis/config.openshift.io/v1/clusterversions/%s answered by a real kube-apiserver", k.server, pos[1])
	} else {
		say("PATCH %s/apis/config.openshift.io/v1/clusterversions/%s answered by the API stand-in on %s (no real kube-apiserver: it keeps the ClusterVersion in memory)", k.server, pos[1], node)
	}
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
	k, err := newKubeClient(f["kubeconfig"])
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
		node, err := k.do(http.MethodGet, etcdOperatorPath, "", nil, &etcd)
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			for _, c := range etcd.Status.Conditions {
				if c.Type == "EtcdBootstrapMemberRemoved" {
					if c.Status == "True" {
						fmt.Fprintf(stdout, "Cluster etcd operator bootstrapped successfully (%s, answered by %s)\n", c.Message, node)
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
