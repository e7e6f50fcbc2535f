// Package cluster talks to a lab's OpenShift cluster the way
// `openshift-install wait-for` does, with plain net/http and the k8s.io/api
// types (no client-go): it narrates the bootstrap (API through the load
// balancer, MCS, bootkube's .done markers and containers over SSH, etcd
// members, masters Ready, the kube-system/bootstrap ConfigMap and
// EtcdBootstrapMemberRemoved), waits for install-complete, and approves only
// the CSRs of this lab's nodes.
package cluster
