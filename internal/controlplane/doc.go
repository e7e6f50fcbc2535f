// Package controlplane is the bootstrap control plane of a rehearsal lab as
// bootlab renders and checks it: the kube-apiserver, kube-controller-manager
// and kube-scheduler static pods that stages 08-10 write into
// bootstrap-manifests/, with the flags the release's upstream binaries
// accept (OpenShift's pods read the same settings from --openshift-config,
// which upstream Kubernetes does not have), a master's kube-apiserver pod
// and the files its installer copies into static-pod-resources, and the checks `stage validate`
// runs on them and on the certificates they name. A leaf: the agent's
// renders, the stages and the tests share it.
package controlplane
