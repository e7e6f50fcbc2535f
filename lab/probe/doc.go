// Package probe is the probe lab: the configuration and Ignition its tiny
// VMs boot with, the stand-ins they serve (a Machine Config Server on 22623,
// an API /readyz on 6443, ingress on 80/443), the agent's Ignition fetching
// (pointer configs followed as Ignition does), the JSON check report each
// node writes to its serial console, and the initramfs image builder.
//
// Of bootlab it imports only internal/ignition, internal/pki and lab/cache (the one
// cache root), so the agent binary, which imports it, stays small.
package probe
