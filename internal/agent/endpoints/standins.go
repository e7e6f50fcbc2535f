package endpoints

import (
	"fmt"
	"net/http"

	"github.com/bootlab/bootlab/internal/wire"
)

// APIHealth answers a kube-apiserver's health checks as a ready one does:
// /readyz, /livez and /healthz 200 "ok". Everything else is 404: it is no
// API. A plain probe lab's bootstrap and masters serve it on 6443, so the
// load balancer's checks and lab verify prove the lab's network without a
// release; a rehearsal lab runs the release's kube-apiserver instead.
func APIHealth(node string) http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set(wire.NodeHeader, node)
		_, _ = w.Write([]byte("ok"))
	}
	mux.HandleFunc("/readyz", ok)
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/healthz", ok)
	return mux
}

// IngressStandIn answers any path with the node's name, like a router pod
// serving a default backend.
func IngressStandIn(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(wire.NodeHeader, node)
		fmt.Fprintf(w, "bootlab probe ingress on %s\n", node)
	})
}
