// Package lab is bootlab's orchestration of a lab, the one package a
// command calls to change one: Open gives a *Lab with a method per verb
// (Up is all of `lab up`: inputs, preflight and the accelerator, the lab
// key, the profile's preparer, the converge, host DNS; Down is `lab down`,
// Verify `lab verify`, Pivot `lab pivot`, ...), the same call for `lab X`
// and for each lab of `class X`. The functions Up and Down converge the
// libvirt objects and host files of a pure plan (spec -> XML) through the
// hypervisor port (lab/hypervisor, implemented by lab/libvirt), and the
// checkpoints, status and list verbs read and change the same lab.
//
// The leaves it calls never import it: they take the spec from lab/spec
// and the lab directory from lab/labdir. Only lab writes a lab's state, and
// only under the lab's lock. lab never imports cobra and never prints: it
// takes a *slog.Logger and a *status.Status from its caller.
package lab
