// Package wire is what the host and the probe agent in the guest exchange:
// the probe config a node's Ignition carries and the files it lays down
// beside it (config.go), the check report each node writes to its serial
// console (report.go), the etcd member list a rehearsal master reports
// (etcd.go), a rehearsal's release and the files its nodes are given
// (rehearsal.go), and what the image and the domains give the agent at
// boot: modules, the Kubernetes volume, the saved-start entry (boot.go).
//
// It imports no bootlab package: the host's builders (lab/probe) and the
// agent (internal/agent) both import it, and neither imports the other.
package wire
