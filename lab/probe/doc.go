// Package probe is the probe lab's host side: the Ignition configs its tiny
// VMs boot with (the probe config of internal/wire, the lab PKI's files,
// a rehearsal bootstrap's /opt/openshift with the spec's networks), the
// initramfs image with the agent as /init, the rehearsal tools archive and
// the Kubernetes volume.
//
// The agent (internal/agent) does not import it: what host and guest
// exchange (the probe config, the console report, the paths) is
// internal/wire's, which both import.
package probe
