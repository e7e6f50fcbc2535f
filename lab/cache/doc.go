// Package cache owns bootlab's download cache: where it is (Dir), what it
// holds (List), and how it travels to a host without internet (Export,
// Import) and shrinks (Prune). The layouts below the root belong to their
// writers: rhcos/ (lab/images), clients/<version>/ (lab/openshift),
// probe/<hash>/, debian/ and agent/ (lab/probe).
package cache
