package archtest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kubeClientExceptions are the files of API-speaking packages that make
// HTTP requests of their own, none to a Kubernetes API server.
var kubeClientExceptions = map[string]string{
	"internal/guestcluster/operators/etcd/etcdapi.go": "etcd's own v3 JSON API (the gateway on its client port), not a Kubernetes API server",
	"lab/cluster/openshift_types.go":                  "the Machine Config Server through the load balancer, not the API server",
	"internal/agent/fetch.go":                         "Ignition's fetch of a pointer config from the Machine Config Server",
}

// Only internal/kube speaks HTTP to a Kubernetes API server, and only it
// reads a kubeconfig: the guest cluster once had three REST clients and
// three kubeconfig parsers (lab/cluster's, kubecreate's and the
// stand-ins'). What imports can show is checked in TestImportArrows (no
// client-go); this reads the sources of every package that speaks to an
// API (it imports internal/kube, or it is lab/cluster or under
// internal/guestcluster) for an HTTP client or request made there, and
// every source for a kubeconfig's fields declared outside internal/kube.
func TestOnlyKubeSpeaksToAnAPIServer(t *testing.T) {
	t.Parallel()
	speaks := map[string]bool{}
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			if imp == module+"internal/kube" {
				speaks[p.ImportPath] = true
			}
		}
		if under(p.ImportPath, "lab/cluster", "internal/guestcluster") {
			speaks[p.ImportPath] = true
		}
	}
	delete(speaks, "internal/kube")
	client := regexp.MustCompile(`http\.(Client|Transport)\{|http\.NewRequest|http\.(Get|Post|Head)\(`)
	kubeconfigField := regexp.MustCompile("json:\"(certificate-authority-data|client-certificate-data|client-key-data)\"")
	goSources(t, func(rel string, data []byte) {
		dir := filepath.ToSlash(filepath.Dir(rel))
		for i, line := range strings.Split(string(data), "\n") {
			if speaks[dir] && client.MatchString(line) && kubeClientExceptions[rel] == "" {
				t.Errorf("%s:%d makes an HTTP client or request of its own in a package that speaks to a Kubernetes API: use internal/kube (a kube.Client, or kube.Probe for /readyz), or list the file in kubeClientExceptions with what it talks to: %s", rel, i+1, strings.TrimSpace(line))
			}
			if dir != "internal/kube" && kubeconfigField.MatchString(line) {
				t.Errorf("%s:%d declares a kubeconfig's fields outside internal/kube, the one kubeconfig reader and writer: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
	})
	for rel := range kubeClientExceptions {
		if !speaks[filepath.ToSlash(filepath.Dir(rel))] {
			t.Errorf("kubeClientExceptions lists %s, whose package speaks to no API: drop it", rel)
		}
	}
}
