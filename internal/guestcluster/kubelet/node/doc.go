// Package node is the kubelet stand-in's node join, done as the kubelet
// does it against a real kube-apiserver: a client CSR with the bootstrap
// kubeconfig (the installer's node-bootstrapper), the certificate once an
// approver approves and the signer signs, then the Node, its Lease
// heartbeat and mirror pods for the static pods the stand-in runs. Pods
// the stand-in cannot run are reported as not run, never as Running.
package node
