package stages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/node"
)

// Check is one validation of what a stage produced, read back from the node.
type Check struct {
	Name string `json:"name"`
	// Live checks ask something running (etcd, the API, the MCS) rather
	// than read files.
	Live bool                                         `json:"live,omitempty"`
	Run  func(ctx context.Context, e *CheckEnv) error `json:"-"`
}

// CheckEnv is what a check may look at.
type CheckEnv struct {
	Node node.Node
	Vars Vars
	Now  time.Time
}

// ValidateOptions change what Validate runs.
type ValidateOptions struct {
	// SkipLive leaves out checks of running services.
	SkipLive bool
	// Now is the time certificates must be valid at (default time.Now()).
	Now time.Time
}

// Validate runs the checks of stage s against the node. It returns every
// result, grouped under the stage's label ("07 etcd-bootstrap") with the
// reason of a failure as its detail; a failed check does not stop the
// others.
func Validate(ctx context.Context, n node.Node, s *Stage, v Vars, opts ValidateOptions) []check.Result {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	env := &CheckEnv{Node: n, Vars: v, Now: now}
	var out []check.Result
	for _, c := range s.Checks {
		if c.Live && opts.SkipLive {
			continue
		}
		r := check.Result{Group: s.Label(), Name: c.Name, State: check.StatePassed}
		if err := c.Run(ctx, env); err != nil {
			r.State, r.Detail = check.StateFailed, err.Error()
		}
		out = append(out, r)
	}
	return out
}

// ---- check builders ----

func opt(p string) string { return path.Join(AssetDir, p) }

func marker(name string) Check {
	p := opt(name)
	return Check{Name: "marker " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		_, err := e.Node.Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is missing: the stage has not finished (run it, then look at its output log)", p)
		}
		return err
	}}
}

// file checks a regular file exists, is not empty and, when mode is not
// zero, has exactly that mode.
func file(p string, mode fs.FileMode) Check {
	name := "file " + p
	if mode != 0 {
		name += fmt.Sprintf(" (mode %04o)", mode)
	}
	return Check{Name: name, Run: func(ctx context.Context, e *CheckEnv) error {
		fi, err := statFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		if fi.IsDir {
			return fmt.Errorf("%s is a directory, want a file", p)
		}
		if fi.Size == 0 {
			return fmt.Errorf("%s is empty", p)
		}
		if mode != 0 && fi.Mode != mode {
			return fmt.Errorf("%s has mode %04o, want %04o", p, fi.Mode, mode)
		}
		return nil
	}}
}

func dir(p string) Check {
	return Check{Name: "directory " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		fi, err := statFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		if !fi.IsDir {
			return fmt.Errorf("%s is not a directory", p)
		}
		return nil
	}}
}

func absent(p, why string) Check {
	return Check{Name: "absent " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		_, err := e.Node.Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s still exists: %s", p, why)
	}}
}

func statFile(ctx context.Context, n node.Node, p string) (node.FileInfo, error) {
	fi, err := n.Stat(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return fi, fmt.Errorf("%s is missing", p)
	}
	return fi, err
}

func readFile(ctx context.Context, n node.Node, p string) ([]byte, error) {
	data, err := n.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing", p)
	}
	return data, err
}

func trim(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
