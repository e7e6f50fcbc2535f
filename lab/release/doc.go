// Package release pins, per OpenShift minor, the versions of the upstream
// programs a rehearsal lab runs for real: the etcd the release ships (the
// version downloaded) and the one bootlab builds from the Go module proxy,
// the Kubernetes version, and, in checksums.txt beside them, the sha256 of
// each official artefact. One table, a leaf: lab/upstream, lab/probe and
// the docs tests read it.
package release
