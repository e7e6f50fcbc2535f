// Package clusterbootstrap plays `cluster-bootstrap start` on a rehearsal
// bootstrap (stage 13), as openshift/cluster-bootstrap's pkg/start does on
// the release's branch: it lands the temporary control plane's secrets and
// pods for the kubelet stand-in (start.go), waits for any answer from
// localhost:6443/readyz, creates manifests/ in the background while it
// waits for the required pods (requiredpods.go), waits at the release's HA
// gate with its load-balancer delay (behaviour.go), sends bootstrap-success
// and bootstrap-finished and tears the temporary control plane down, in the
// release's order. ConfigMap kube-system/bootstrap is not its work:
// report-progress.sh writes it after stage 15.
package clusterbootstrap
