// Package create creates a directory of manifests through a real
// Kubernetes API, the way cluster-bootstrap creates /opt/openshift/manifests
// on the bootstrap node (library-go's EnsureManifestsCreated): load every
// file, then create in rounds, CRDs first and namespaces before what lives
// in them, until everything exists or the deadline passes.
//
// It runs inside the static probe agent on the bootstrap and speaks the
// API through internal/kube, with the client certificate of a kubeconfig
// like /opt/openshift/auth/kubeconfig.
package create
