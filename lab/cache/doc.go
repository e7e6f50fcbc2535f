// Package cache owns bootlab's download cache: where it is (Dir), what it
// holds (List), and how it travels to a host without internet (Export,
// Import) and shrinks (Prune). The layouts below the root belong to their
// writers: rhcos/ (lab/images), clients/<version>/ (lab/openshift),
// probe/<hash>/, debian/, debian-tools/ and agent/ (lab/probe), and
// gobuild/<name>/<version>-<recipe>/ (lab/gobuild: programs built from the
// Go module proxy, etcd now, the Kubernetes binaries next).
package cache
