// Package cache owns bootlab's download cache: where it is (Dir), what it
// holds (List), and how it travels to a host without internet (Export,
// Import) and shrinks (Prune). The layouts below the root belong to their
// writers: rhcos/ (lab/images), clients/<version>/ (lab/openshift),
// probe/<hash>/, debian/, debian-tools/, agent/ and kube-volume/
// (lab/probe), gobuild/<name>/<version>-<recipe>/ (lab/gobuild: etcd and
// Kubernetes built from the Go module proxy) and
// official/<name>/<version>-<key>/ (lab/upstream: the same programs as
// their projects publish them, checked against pinned checksums).
package cache
