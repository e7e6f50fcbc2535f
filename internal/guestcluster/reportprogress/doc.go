// Package reportprogress plays progress.service on a rehearsal bootstrap:
// the installer's report-progress.sh (data/data/bootstrap/files/usr/local/
// bin/report-progress.sh, run by progress.service with
// /opt/openshift/auth/kubeconfig). It waits for /opt/openshift/.bootkube.done
// (stage 15 writes it), then, on a HighlyAvailable control plane, for the
// masters' API (wait-for-ha-api.sh: two addresses in the default/kubernetes
// endpoints up to 4.17, a current kube-apiserver revision on two masters
// from 4.18), and creates ConfigMap kube-system/bootstrap with
// status complete through api-int, every 5 s until it exists: the signal
// the etcd operator's bootstrap teardown and openshift-install wait for.
// The rehearsal bootstrap has no systemd: its agent runs this stand-in from
// boot, as the enabled unit would be.
package reportprogress
