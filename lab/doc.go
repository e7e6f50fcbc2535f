// Package lab is bootlab's orchestration of a lab, the one package a
// command calls to change one: Open gives a *Lab with a method per verb
// (Up is all of `lab up`: inputs, preflight and the accelerator, the lab
// key, the profile's preparer, the converge, host DNS; Down is `lab down`,
// Verify `lab verify`, Pivot `lab pivot`, ...), the same call for `lab X`
// and for each lab of `class X`. Open reads the lab directory itself, so
// a command hands it the spec as the user gave it and every verb but Up
// acts on the lab as built. It is the facade (kind's pkg/cluster):
// the converge engine, the checkpoints and the preparers live under
// lab/internal/engine, the pure plan it applies under lab/internal/plan
// (only this package and the engine import them), and the values the
// verbs take and return are named here (engine.go).
//
// The leaves it calls never import it: they take the spec from lab/spec
// and the lab directory from lab/labdir. lab never imports cobra and never
// prints: it takes a *slog.Logger and a *status.Status from its caller.
package lab
