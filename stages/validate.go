package stages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/timing"
)

// Check is one validation of what a stage produced, read back from the node.
type Check struct {
	Name string `json:"name"`
	// Live checks ask something running (etcd, the API, the MCS) rather
	// than read files.
	Live bool                                         `json:"live,omitempty"`
	Run  func(ctx context.Context, e *CheckEnv) error `json:"-"`
	// Reads are the paths the check stats or reads: Validate reads every
	// check's in one command first (node.Prefetch), since over SSH each
	// read is otherwise a command with programs on the node.
	Reads []string `json:"-"`
}

// CheckEnv is what a check may look at.
type CheckEnv struct {
	Node node.Node
	Vars Vars
	Now  time.Time
	// api is asked once per pass before the kubectl checks (nil: not
	// asked, kubectl runs).
	api *apiGate
}

// ValidateOptions change what Validate runs.
type ValidateOptions struct {
	// SkipLive leaves out checks of running services.
	SkipLive bool
	// Now is the time certificates must be valid at (default time.Now()).
	Now time.Time
	// Wait is how long live checks that fail are asked again once every
	// other check of the stage passed: what a stage starts (etcd, the MCS,
	// the API) answers a moment after its script returns, longer under
	// TCG. Zero asks once. A stage whose files are not there (it has not
	// run, or failed) is reported at once.
	Wait time.Duration
	// Interval is the pause between asks (default 2s).
	Interval time.Duration
	// Waiting, when set, is told before each pause which live checks are
	// still failing and how long is left.
	Waiting func(names []string, left time.Duration)
	// Read, when set, answers the first pass's reads instead of a read
	// of Validate's own: ReadChecks of this stage among others, so that
	// validating several stages reads the node once. Checks asked again
	// (Wait) still go to the node.
	Read node.Node
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
	var out []check.Result
	ran := checksToRun(s, opts.SkipLive) // ran[i] gives out[i]
	read := opts.Read
	if read == nil {
		read = prefetchChecks(ctx, n, ran)
	}
	first := &CheckEnv{Node: read, Vars: v, Now: now, api: &apiGate{}}
	for _, c := range ran {
		out = append(out, runCheck(ctx, first, s, c))
	}
	if opts.Wait <= 0 {
		return out
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	deadline := time.Now().Add(opts.Wait)
	for {
		again := liveFailures(out, ran)
		left := time.Until(deadline)
		if len(again) == 0 || left <= 0 {
			return out
		}
		if opts.Waiting != nil {
			names := make([]string, len(again))
			for j, i := range again {
				names[j] = ran[i].Name
			}
			opts.Waiting(names, left)
		}
		if !timing.Sleep(ctx, min(interval, left)) {
			return out
		}
		env := &CheckEnv{Node: n, Vars: v, Now: now, api: &apiGate{}}
		for _, i := range again {
			out[i] = runCheck(ctx, env, s, ran[i])
		}
	}
}

// checksToRun are the checks of s that Validate runs.
func checksToRun(s *Stage, skipLive bool) []Check {
	var ran []Check
	for _, c := range s.Checks {
		if !c.Live || !skipLive {
			ran = append(ran, c)
		}
	}
	return ran
}

// ReadChecks reads on n, in one command, what the checks of every stage
// of sel read (those Validate runs with skipLive), for their first pass
// (ValidateOptions.Read): `stage validate --all` reads the node once, not
// once a stage. A node the read cannot reach is returned itself.
func ReadChecks(ctx context.Context, n node.Node, sel []*Stage, skipLive bool) node.Node {
	var ran []Check
	for _, s := range sel {
		ran = append(ran, checksToRun(s, skipLive)...)
	}
	return prefetchChecks(ctx, n, ran)
}

// prefetchChecks reads what the checks read in one command, for their
// first pass (the files do not change under it); the live checks asked
// again later go to the node itself. A node the prefetch cannot reach is
// asked directly, so that each check reports what failed.
func prefetchChecks(ctx context.Context, n node.Node, checks []Check) node.Node {
	var paths []string
	for _, c := range checks {
		for _, p := range c.Reads {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	if pre, err := readTogether(ctx, n, paths); err == nil {
		return pre
	}
	return n
}

// readTogether is n answering for paths from one read of them all
// (node.Prefetch) when there are two or more; a single path is read as
// cheaply on its own, so n itself is returned.
func readTogether(ctx context.Context, n node.Node, paths []string) (node.Node, error) {
	if len(paths) < 2 {
		return n, nil
	}
	pre, err := node.Prefetch(ctx, n, node.Paths{Files: paths})
	if err != nil {
		return nil, err
	}
	return pre, nil
}

func runCheck(ctx context.Context, env *CheckEnv, s *Stage, c Check) check.Result {
	r := check.Result{Group: s.Label(), Name: c.Name, State: check.StatePassed}
	if err := c.Run(ctx, env); err != nil {
		r.State, r.Detail = check.StateFailed, err.Error()
	}
	return r
}

// liveFailures are the indexes of the failed live checks, none when a
// check that reads files failed: the stage's own output is not all there,
// and no wait makes it so.
func liveFailures(out []check.Result, ran []Check) []int {
	var live []int
	for i, r := range out {
		if !r.Failed() {
			continue
		}
		if !ran[i].Live {
			return nil
		}
		live = append(live, i)
	}
	return live
}

// ---- check builders ----

func opt(p string) string { return path.Join(AssetDir, p) }

func marker(name string) Check {
	p := opt(name)
	return Check{Name: "marker " + p, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
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
	return Check{Name: name, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
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
	return Check{Name: "directory " + p, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
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
	return Check{Name: "absent " + p, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
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
