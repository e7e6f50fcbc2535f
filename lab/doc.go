// Package lab is the hypervisor side of bootlab: a Lab spec (YAML) with its
// defaults and validation, a pure plan of the libvirt objects and host files
// it needs, and the verbs (up, down, status, preflight) that apply the plan
// through the hypervisor port (lab/hypervisor, implemented by lab/libvirt).
//
// lab never imports cobra and never prints: it takes a *slog.Logger and a
// *status.Status from its caller.
package lab
