// Package release pins, per OpenShift minor, the versions of the upstream
// programs a rehearsal lab runs for real: the etcd the release ships and
// the one bootlab builds from the Go module proxy, and the Kubernetes
// minor. One table, a leaf: lab/probe, lab/gobuild's callers and the docs
// tests read it.
package release
