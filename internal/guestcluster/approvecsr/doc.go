// Package approvecsr plays approve-csr.service on a rehearsal bootstrap.
// approve-csr.service on a real bootstrap runs approve-csr.sh with the
// loopback admin kubeconfig: every 20 s, until /opt/openshift/.bootkube.done
// exists, it approves every Pending CSR (oc get csr | grep Pending | oc adm
// certificate approve). That is how the masters' kubelets get their client
// certificates while the bootstrap's control plane runs: the bootstrap's
// kube-controller-manager signs what is approved. The rehearsal bootstrap
// has no systemd: its agent runs this stand-in from boot, as the enabled
// unit would be, and the script's errors before the API answers are as
// silent here as oc's are in the journal.
package approvecsr
