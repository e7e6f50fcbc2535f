// Package kube is bootlab's one Kubernetes REST client and kubeconfig
// loader: JSON over net/http with the apimachinery wire types (no
// client-go, which adds 237 KiB to the static guest agent), a client
// certificate or a bearer token, the server's name checked against the
// kubeconfig's CA. The guest cluster's parts and the host's lab/cluster
// both speak to an API server through it. It imports no bootlab package.
package kube
