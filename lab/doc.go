// Package lab is bootlab's orchestration of a lab, the one package a
// command calls to change one: Build is all of `lab up` (inputs, preflight
// and the accelerator, the lab key, the profile's preparer, Up, host DNS),
// Teardown is `lab down`, Pivot is `lab pivot`; Up and Down converge the
// libvirt objects and host files of a pure plan (spec -> XML) through the
// hypervisor port (lab/hypervisor, implemented by lab/libvirt), and the
// checkpoints, status and list verbs read and change the same lab.
//
// The leaves it calls never import it: they take the spec from lab/spec
// and the lab directory from lab/labdir. Only lab writes a lab's state, and
// only under the lab's lock. lab never imports cobra and never prints: it
// takes a *slog.Logger and a *status.Status from its caller.
package lab
