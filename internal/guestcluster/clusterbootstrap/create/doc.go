// Package create creates a directory of manifests through a real
// Kubernetes API, the way cluster-bootstrap creates /opt/openshift/manifests
// on the bootstrap node (library-go's EnsureManifestsCreated): load every
// file, then create in rounds every 200 ms, in the files' lexical order,
// asking discovery again when a kind is not served yet, until everything
// exists or the deadline passes.
//
// It runs inside the static probe agent on the bootstrap and speaks the
// API through internal/kube, with the client certificate of a kubeconfig
// like /opt/openshift/auth/kubeconfig.
package create
