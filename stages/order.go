package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/bootlab/bootlab/internal/node"
)

// ServiceRecords is bootkube's service record file on the node, which the
// node's script and bootlab's scripts both append to.
const ServiceRecords = "/var/log/openshift/bootkube.json"

// Proof is what shows on the node that stage s ran to its end: its Done
// markers (stage 14's is .bootkube.done, which only stage 15 writes: its
// own marked steps stand in) and, when its last named step has no marker
// (wait-for-ceo), a successful service record of that step. A stage
// without proof (02, which bootkube redoes on every start) is never
// required before another.
func (s *Stage) Proof() (markers []string, record string) {
	writes := func(m string) bool {
		for _, st := range s.Steps {
			if st.Marker == m {
				return true
			}
		}
		return false
	}
	for _, m := range s.Done {
		if writes(m) {
			markers = append(markers, m)
		}
	}
	if len(markers) == 0 {
		// Steps every release and cluster has (not the konnectivity ones).
		for _, st := range s.Steps {
			if st.Marker != "" && !st.Optional && st.Since.IsZero() {
				markers = append(markers, st.Marker)
			}
		}
	}
	for i := len(s.Steps) - 1; i >= 0; i-- {
		if st := s.Steps[i]; !strings.HasPrefix(st.Name, "(") {
			if st.Marker == "" && len(markers) > 0 {
				record = st.Name
			}
			break
		}
	}
	return markers, record
}

// NodeState is what the node shows of the stages: which markers exist and
// which steps bootkube.json records as ended with success.
type NodeState struct {
	markers   map[string]bool
	succeeded map[string]bool
	// listed is AssetDir's listing when it could be read (nil when not):
	// it answers for the markers of a node script the catalog does not
	// name as well.
	listed map[string]bool
}

// ReadNodeState reads every marker of the catalog and the service records.
// The markers are files in AssetDir, so one listing of it answers for all
// of them: a stat each was one SSH session per marker, about thirty, each a
// process on the node, and a stage run reads the state three times.
func ReadNodeState(ctx context.Context, n node.Node, c Catalog) (*NodeState, error) {
	// The listing and the records in one command (none when n read them).
	pre, err := node.Prefetch(ctx, n, node.Paths{Files: []string{ServiceRecords}, Dirs: []string{AssetDir}})
	if err != nil {
		return nil, err
	}
	n = pre
	st := &NodeState{markers: map[string]bool{}, succeeded: map[string]bool{}}
	if listed, ok := listAssetDir(ctx, n); ok {
		st.listed = listed
	}
	for _, s := range c {
		for _, m := range append(s.Markers(), s.Done...) {
			if _, seen := st.markers[m]; seen {
				continue
			}
			has, err := st.Marker(ctx, n, m)
			if err != nil {
				return nil, err
			}
			st.markers[m] = has
		}
	}
	data, err := n.ReadFile(ctx, ServiceRecords)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", ServiceRecords, n, err)
	}
	var recs []struct {
		Stage, Phase string
		Result       Result
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("%s on %s is not bootkube's JSON array of service records: %w", ServiceRecords, n, err)
	}
	for _, r := range recs {
		if r.Phase == PhaseEnd && r.Stage != "" {
			st.succeeded[r.Stage] = r.Result == ResultSuccess
		}
	}
	return st, nil
}

// listAssetDir returns the names in AssetDir on the node, with ok false
// when it could not list them (the markers are then looked at one by one,
// which reports why). No AssetDir yet is an empty listing.
func listAssetDir(ctx context.Context, n node.Node) (names map[string]bool, ok bool) {
	list, err := node.List(ctx, n, AssetDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return map[string]bool{}, true
		}
		if _, serr := n.Stat(ctx, AssetDir); errors.Is(serr, fs.ErrNotExist) {
			return map[string]bool{}, true
		}
		return nil, false
	}
	names = map[string]bool{}
	for _, l := range list {
		names[l] = true
	}
	return names, true
}

// RunIf is s.RunIf answered from the markers read, without going back to
// the node: ReadNodeState reads every Done marker of the catalog.
func (st *NodeState) RunIf(s *Stage) (bool, string) {
	run, why, _ := s.runIf(func(m string) (bool, error) { return st.markers[m], nil })
	return run, why
}

// Has reports whether marker m exists.
func (st *NodeState) Has(m string) bool { return st.markers[m] }

// Marker reports whether marker m (a name in AssetDir) exists: from what
// was read when the catalog names it or AssetDir could be listed, else
// from a stat on n (ReadNodeState reads the catalog's markers with it).
func (st *NodeState) Marker(ctx context.Context, n node.Node, m string) (bool, error) {
	if has, read := st.markers[m]; read {
		return has, nil
	}
	if st.listed != nil && !strings.Contains(m, "/") {
		return st.listed[m], nil
	}
	_, err := n.Stat(ctx, path.Join(AssetDir, m))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("check marker %s on %s: %w", m, n, err)
}

// Missing says what of s's proof the node lacks ("" when s finished, or
// has no proof).
func (st *NodeState) Missing(s *Stage) string {
	markers, record := s.Proof()
	var missing []string
	for _, m := range markers {
		if !st.markers[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return strings.Join(missing, ", ") + " missing"
	}
	if record != "" && !st.succeeded[record] {
		return "no successful " + record + " in " + ServiceRecords
	}
	return ""
}

// Started names the markers of s's proof that exist: s has run, in part
// or whole, and what it made may have been consumed.
func (st *NodeState) Started(s *Stage) []string {
	markers, _ := s.Proof()
	var out []string
	for _, m := range markers {
		if st.markers[m] {
			out = append(out, m)
		}
	}
	return out
}

// RefusedError is a run refused before anything ran on the node: a stage
// out of bootkube's order, or a --force that would break what a later
// stage made. Commands add how to get back (Redo).
type RefusedError struct {
	Stage *Stage
	// Needs is the earlier stage that must run first (out of order).
	Needs *Stage
	// Redo is set when the way forward is to redo Stage from before it:
	// a checkpoint reset on a lab, a fresh bootstrap node otherwise.
	Redo   bool
	Reason string
}

func (e *RefusedError) Error() string { return e.Reason }

// CheckOrder refuses a selection in which a stage would run before an
// earlier stage it needs has finished. Every stage needs the stages before
// it that this release has and that leave proof (bootkube.sh runs them in
// that order, each reading what the others made); one selected before it
// counts, as it runs first in the same run.
func (c Catalog) CheckOrder(st *NodeState, sel []*Stage, v Version) error {
	selected := map[int]bool{}
	for _, s := range sel {
		if s.SkipReason(v) != "" {
			continue
		}
		for _, p := range c {
			if p.Number >= s.Number || selected[p.Number] || p.SkipReason(v) != "" {
				continue
			}
			if missing := st.Missing(p); missing != "" {
				return &RefusedError{Stage: s, Needs: p, Reason: fmt.Sprintf(
					"stage %s (%s) needs stage %s (%s) first: run bootlab stage run %s (%s). bootkube.sh runs its steps in this order, each reading what the ones before it made; nothing ran",
					s.ID(), s.Slug, p.ID(), p.Slug, p.ID(), missing)}
			}
		}
		selected[s.Number] = true
	}
	return nil
}

// Prerequisites are the stages sel needs that have not finished and are
// not selected, in bootkube's order: what CheckOrder would name, all of
// them. On a rehearsal lab `stage run 07` runs them first, as bootkube
// would; on a real node they are refused (CheckOrder) and named.
func (c Catalog) Prerequisites(st *NodeState, sel []*Stage, v Version) []*Stage {
	selected, last := map[int]bool{}, 0
	for _, s := range sel {
		selected[s.Number] = true
		if s.SkipReason(v) == "" && s.Number > last {
			last = s.Number
		}
	}
	var out []*Stage
	for _, p := range c {
		if p.Number < last && !selected[p.Number] && p.SkipReason(v) == "" && st.Missing(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// rerunSafe says why a forced rerun of stage n cannot break a later stage,
// or "" when it can: 02 has no marker and runs every time anyway; 14 sends
// the same merge patch again, removes a file already gone and only waits
// for the etcd operator; 15 is the last.
func rerunSafe(n int) string {
	switch n {
	case 2:
		return "it has no marker and runs every time"
	case 14:
		return "it sends the same CVO patch again, removes a file already gone and only waits"
	case 15:
		return "no stage comes after it"
	}
	return ""
}

// rerunHarm says what a forced rerun of stage n does to the later stages
// that already read what it made.
func rerunHarm(n int) string {
	switch n {
	case 1:
		return "it copies openshift/* over manifests/ again, and manifests/99_feature-gate.yaml loses the feature gates stage 03 resolved for this payload, which the later renders and the CVO read"
	case 3:
		return "it rewrites manifests/99_feature-gate.yaml and the CRDs in manifests/ that the later renders already read"
	case 7:
		return "it renders new etcd certificates and restarts the bootstrap etcd member under a kube-apiserver config and manifests made for the old ones"
	case 12:
		return "it copies the bootstrap MCO pod back into /etc/kubernetes/manifests, so a stale bootstrap MCS serves master configs again after stage 14 stopped it, and its manifests replace what the later stages used"
	}
	return "its render replaces files in manifests/, tls/ or /etc/kubernetes that the later stages already read, so what they made no longer matches"
}

// CheckForce refuses a --force that would leave the node where bootkube
// cannot finish: rerunning a stage whose output a later stage, not rerun
// in the same selection, already consumed, or rerunning cluster-bootstrap
// after it handed over to the masters. The safe reruns are the last stage
// that ran (nothing has read its output yet), a stage rerun together with
// every later one that ran, 02, 14 and 15.
func (c Catalog) CheckForce(st *NodeState, sel []*Stage, v Version) error {
	selected := map[int]bool{}
	for _, s := range sel {
		selected[s.Number] = true
	}
	for _, s := range sel {
		if s.SkipReason(v) != "" || rerunSafe(s.Number) != "" {
			continue
		}
		if s.Slug == "cb-bootstrap" && st.Has("cb-bootstrap.done") {
			return &RefusedError{Stage: s, Redo: true, Reason: fmt.Sprintf(
				"--force %s (%s) refused: cb-bootstrap.done exists, so cluster-bootstrap has handed the control plane to the masters and torn the temporary one down; a rerun would start a second temporary control plane (bootstrap kube-apiserver, controller manager, scheduler, CVO) and create every manifest again over the cluster's own state. Nothing ran",
				s.ID(), s.Slug)}
		}
		for _, l := range c {
			if l.Number <= s.Number || selected[l.Number] || l.SkipReason(v) != "" {
				continue
			}
			if started := st.Started(l); len(started) > 0 {
				return &RefusedError{Stage: s, Redo: true, Reason: fmt.Sprintf(
					"--force %s (%s) refused: stage %s (%s) has run since (%s) and used what %s made; %s. Nothing ran",
					s.ID(), s.Slug, l.ID(), l.Slug, strings.Join(started, ", "), s.ID(), rerunHarm(s.Number))}
			}
		}
	}
	return nil
}
