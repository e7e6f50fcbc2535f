package stages

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/node"
)

// StageStatus is one stage's state on the node.
type StageStatus struct {
	Number  int      `json:"number"`
	Slug    string   `json:"slug"`
	State   string   `json:"state"` // done, pending, always, skipped
	Present []string `json:"markersPresent"`
	Missing []string `json:"markersMissing"`
	Reason  string   `json:"reason,omitempty"`
}

// Status is what `stage status -o json` prints.
type Status struct {
	Node string `json:"node"`
	// Bootkube is bootkube.service's state: active, inactive, failed,
	// masked, or unknown (no systemd).
	Bootkube string        `json:"bootkubeService"`
	Next     string        `json:"next,omitempty"`
	Stages   []StageStatus `json:"stages"`
}

// bootkubeState asks systemd about bootkube.service.
func bootkubeState(ctx context.Context, n node.Node) string {
	out, err := node.Output(ctx, n, "systemctl is-enabled bootkube.service 2>/dev/null; systemctl is-active bootkube.service")
	lines := strings.Fields(string(out))
	if len(lines) == 0 || (err != nil && len(lines) < 2) {
		return "unknown"
	}
	if lines[0] == "masked" {
		return "masked"
	}
	return lines[len(lines)-1]
}

// NodeStatus reads the markers of every stage from the node: from one
// listing of AssetDir (ReadNodeState), not a stat per marker, which over
// SSH was a session each, about forty-five for the catalog.
func NodeStatus(ctx context.Context, n node.Node, c Catalog, v Version) (*Status, error) {
	st := &Status{Node: n.String(), Bootkube: bootkubeState(ctx, n)}
	ns, err := ReadNodeState(ctx, n, c)
	if err != nil {
		return nil, err
	}
	for _, s := range c {
		ss := StageStatus{Number: s.Number, Slug: s.Slug, Present: []string{}, Missing: []string{}}
		// The stage's own markers, and the ones that decide it is done:
		// stage 14 is done only with .bootkube.done (wait-for-ceo has none).
		markers := s.MarkersFor(v)
		for _, m := range s.Done {
			if !slices.Contains(markers, m) {
				markers = append(markers, m)
			}
		}
		for _, m := range markers {
			has, err := ns.Marker(ctx, n, m)
			if err != nil {
				return nil, err
			}
			if has {
				ss.Present = append(ss.Present, m)
			} else {
				ss.Missing = append(ss.Missing, m)
			}
		}
		run, why := ns.RunIf(s)
		switch {
		case s.SkipReason(v) != "":
			ss.State, ss.Reason = "skipped", s.SkipReason(v)
		case len(s.Done) == 0:
			ss.State, ss.Reason = "always", why
		case run:
			ss.State, ss.Reason = "pending", why
		default:
			ss.State = "done"
		}
		if st.Next == "" && ss.State == "pending" {
			st.Next = s.Label()
		}
		st.Stages = append(st.Stages, ss)
	}
	return st, nil
}

// Result is the stage's state as a check: ✓ done (or a stage with no
// marker, which runs every time), … pending, - skipped on this version;
// the detail names the markers (a pending stage's reason is always that one
// of them is missing).
func (ss StageStatus) Result() check.Result {
	r := check.Result{Name: fmt.Sprintf("%02d %s", ss.Number, ss.Slug)}
	switch ss.State {
	case "done":
		r.State, r.Detail = check.StatePassed, "done: "+joinOr(ss.Present)
	case "always":
		r.State, r.Detail = check.StatePassed, ss.Reason
	case "skipped":
		r.State, r.Detail = check.StateSkipped, "skipped: "+ss.Reason
	default:
		r.State, r.Detail = check.StatePending, "pending: missing "+joinOr(ss.Missing)
		if len(ss.Present) > 0 {
			r.Detail += ", present " + joinOr(ss.Present)
		}
	}
	return r
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += "," + x
	}
	return out
}
