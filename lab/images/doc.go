// Package images finds, downloads, verifies and caches what the nodes boot:
// the RHCOS qemu qcow2 named by the installer's CoreOS stream metadata, and
// any other file published with a sha256 (the OpenShift client tarballs).
//
// Downloads resume with HTTP Range, are checked while they stream, and enter
// the cache only by rename after every checksum matched: a partial or corrupt
// file never does.
package images
