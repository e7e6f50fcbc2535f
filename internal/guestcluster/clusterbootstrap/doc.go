// Package clusterbootstrap plays `cluster-bootstrap start` on a rehearsal
// bootstrap (stage 13), in upstream's order: it lands the bootstrap
// secrets and the temporary control plane's pods for the kubelet stand-in,
// waits for the release's kube-apiserver on localhost:6443, creates
// OpenShift's CRDs and every manifest through it (CreateManifests), waits
// for the required pods (requiredpods.go), records kube-system/bootstrap
// complete and tears the temporary control plane down (start.go).
package clusterbootstrap
