// Package probe is the probe lab's host side: the Ignition configs its tiny
// VMs boot with (the probe config of internal/wire, the lab PKI's files,
// a rehearsal bootstrap's /opt/openshift), the initramfs image, the
// rehearsal tools archive and the Kubernetes volume. The stand-ins the
// agent serves (a Machine Config Server on 22623, an API /readyz on 6443,
// ingress on 80/443) and the agent's Ignition fetching (pointer configs
// followed as Ignition does) are here too, for the agent to import.
//
// What host and guest exchange (the probe config, the console report,
// the paths) is internal/wire's.
package probe
