// Package upstream gets the upstream programs a rehearsal lab runs for
// real, Kubernetes (kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl) and etcd, at the versions lab/release pins,
// into the cache, once: from the projects' official release artefacts,
// checked against the checksums pinned beside those versions
// (lab/release/checksums.txt), or built from the Go module proxy by
// lab/gobuild where they cannot be downloaded (no checksum pinned, a site
// that does not answer a short probe) or by choice. Every result says
// which it is and why (Binaries.Why).
package upstream
