// Package installer plays the installer pods of the kube-apiserver,
// kube-controller-manager and kube-scheduler operators on a rehearsal
// master (library-go's static pod installer): who gives a master its
// kube-apiserver. Once the master's etcd member votes and the bootstrap's
// API serves the revision's objects (stage 13 creates them), it copies them
// into the master's static-pod-resources and writes the pod, which the
// kubelet stand-in starts with the release's binary (master.go runs them
// in upstream's order; installer.go installs one revision).
package installer
