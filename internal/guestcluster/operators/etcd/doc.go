// Package etcd plays the cluster-etcd-operator on a rehearsal lab, with
// the release's real etcd and etcdctl: its cluster member controller (a
// master added as a learner, its etcd pod, the promotion;
// membercontroller.go), its bootstrap teardown controller, which reports
// EtcdRunningInCluster once every master votes and removes the
// etcd-bootstrap member once kube-system/bootstrap says complete
// (teardown.go), the status it keeps in etcds/cluster (status.go) and its
// wait-for-ceo command, which returns on EtcdRunningInCluster (waitforceo.go). Changes run
// the node's etcdctl; the reads it repeats go to etcd's JSON API
// (etcdapi.go).
package etcd
