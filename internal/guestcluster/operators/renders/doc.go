// Package renders plays the operators' `render` commands the bootstrap's
// stages run from their release images (cluster-etcd-operator, the
// kube-apiserver, kube-controller-manager and kube-scheduler operators,
// cluster-config-api and -operator, the CVO, ingress, node tuning, the
// cloud-credential-operator) and `machine-config-operator bootstrap`: each
// writes the files its operator writes, certificates signed by the lab's
// CA, pods with the flags internal/controlplane holds them to. The podman
// shim calls them by image.
package renders
