// Package engine is what the lab facade hides (kind's
// pkg/cluster/internal/...): the converge engine (plan, steps, up, down),
// the checkpoints, the preparers and the readers of a lab (status, list).
// Only package lab imports it; the commands reach it through *lab.Lab.
//
// The functions Up and Down converge the libvirt objects and host files of
// a pure plan (spec -> XML) through the hypervisor port (lab/hypervisor,
// implemented by lab/libvirt). Only this package writes a lab's state, and
// only under the lab's lock. It never imports cobra and never prints: it
// takes a *slog.Logger and a *status.Status from its caller.
package engine
