package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/bootlab/bootlab/internal/node"
)

// ReplayDir holds the copies of the node's bootkube.sh that `stage run`
// runs (/run is a tmpfs: they vanish on reboot).
const ReplayDir = "/run/bootlab"

// ReplayPath is where the stop-before copy for stage s is written.
func ReplayPath(s *Stage) string { return ReplayDir + "/bootkube-" + s.ID() + ".sh" }

// Sources of a stage run.
const (
	SourceNode    = "node"
	SourceBootlab = "bootlab"
)

// NodeScript is the node's own bootkube.sh, parsed and mapped to stages.
type NodeScript struct {
	Script *BootkubeScript
	Blocks []StageBlock
	// Release is the version the node runs ("4.21.3"), read from the node.
	Release string
	// Name replaces the description of a script that is not a node's
	// (a local copy given with --bootkube).
	Name string
}

// Describe says which script runs: "node's bootkube.sh (4.21.3)".
func (n *NodeScript) Describe() string {
	if n.Name != "" {
		return n.Name
	}
	r := n.Release
	if r == "" {
		r = "release unknown"
	}
	return "node's bootkube.sh (" + r + ")"
}

// StopBefore lists the steps of stages after s in the script: the replay
// for s stops at the first of them that would start.
func (n *NodeScript) StopBefore(s *Stage) []string {
	var out []string
	for _, st := range n.Script.Steps {
		if st.Stage > s.Number {
			out = append(out, st.Name)
		}
	}
	return out
}

// Block returns the steps of stage s.
func (n *NodeScript) Block(s *Stage) []ScriptStep {
	for _, b := range n.Blocks {
		if b.Stage.Number == s.Number {
			return b.Steps
		}
	}
	return nil
}

// sourceLineRE is a line that sources a /usr/local/bin helper, with an
// optional trailing comment.
var sourceLineRE = regexp.MustCompile(`^(\s*(?:\.|source)\s+"?/usr/local/bin/[A-Za-z0-9._-]+\.sh"?[^;&|#]*?)(\s*#.*)?$`)

// ErrNoStopHook is a script bootlab cannot stop before a step.
var ErrNoStopHook = errors.New("it sources no /usr/local/bin helper after which bootlab could wrap record_service_stage_start")

// BuildReplay returns the node's script altered only so that it stops right
// before the first step of a stage after s: after every line that sources
// a /usr/local/bin helper (bootstrap-service-record.sh defines
// record_service_stage_start), a hook wraps record_service_stage_start so
// that it exits 0 when a later stage's step would start. Everything else,
// the guards that skip finished steps included, is the node's own. The
// copy also does what bootkube.service does for the script: it runs in
// /opt/openshift and records under the service name bootkube.
func (n *NodeScript) BuildReplay(s *Stage) ([]byte, error) {
	stops := n.StopBefore(s)
	lines := strings.Split(string(n.Script.Data), "\n")
	var b bytes.Buffer
	start := 0
	if len(lines) > 0 && strings.HasPrefix(lines[0], "#!") {
		b.WriteString(lines[0] + "\n")
		start = 1
	}
	fmt.Fprintf(&b, "# ---- bootlab: `bootlab stage run %s` ----\n", s.ID())
	fmt.Fprintf(&b, "# A copy of the %s, for stage %s.\n", n.Describe(), s.Label())
	if len(stops) == 0 {
		b.WriteString("# No later stage: it runs whole, as bootkube.service would.\n")
	} else {
		fmt.Fprintf(&b, "# It stops right before %s, the first step of a later stage, with these\n", stops[0])
		b.WriteString("# lines and a `; bootlab_stop_hook` after each line that sources a helper.\n")
		b.WriteString("# Finished steps are skipped by the script's own .done guards.\n")
	}
	b.WriteString("cd " + AssetDir + "\n")
	b.WriteString("export SERVICE_NAME=bootkube\n")
	if len(stops) > 0 {
		fmt.Fprintf(&b, "BOOTLAB_STAGE=%s\n", node.ShellQuote(s.Label()))
		fmt.Fprintf(&b, "BOOTLAB_STOP_BEFORE=%s\n", node.ShellQuote(" "+strings.Join(stops, " ")+" "))
		b.WriteString(`bootlab_stop_hook() {
    declare -F record_service_stage_start >/dev/null || return 0
    case "$(declare -f record_service_stage_start)" in *BOOTLAB_STOP_BEFORE*) return 0 ;; esac
    eval "bootlab_original_$(declare -f record_service_stage_start)"
    record_service_stage_start() {
        case "${BOOTLAB_STOP_BEFORE}" in
        *" ${1-} "*)
            echo "bootlab: stage ${BOOTLAB_STAGE} is done; stopping before ${1}, a step of a later stage"
            bootlab_record_stop "${1}"
            exit 0
            ;;
        esac
        bootlab_original_record_service_stage_start "$@"
    }
}
# bootkube.sh has not finished: its EXIT trap would record "service end"
# with result success. Record the stop instead, with what has not run.
bootlab_record_stop() {
    trap - EXIT
    local ERROR_MESSAGE="bootlab stage run ${BOOTLAB_STAGE%% *} stopped bootkube.sh after stage ${BOOTLAB_STAGE}, before ${1}: bootkube is not finished (no .bootkube.done); not run yet:${BOOTLAB_STOP_BEFORE% }"
    if declare -F record_service_end >/dev/null; then
        record_service_end stopped
    elif declare -F add_service_record_entry >/dev/null; then
        local PHASE="service end" RESULT=stopped
        add_service_record_entry
    fi
}
`)
	}
	b.WriteString("# ---- the node's script ----\n")
	hooks := 0
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if m := sourceLineRE.FindStringSubmatch(l); len(stops) > 0 && m != nil {
			l = m[1] + "; bootlab_stop_hook" + m[2]
			hooks++
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	if len(stops) > 0 && hooks == 0 {
		return nil, fmt.Errorf("%s cannot be stopped before stage %s: %w; run the annotated script (--source bootlab) or the whole script (stage run 15)", n.Script.Path, s.Label(), ErrNoStopHook)
	}
	return b.Bytes(), nil
}

// ReadNodeScript reads the node's bootkube.sh and the helpers it sources,
// parses it and maps it to the catalog's stages. It returns (nil, nil) when
// the node has no bootkube.sh (not a bootstrap node, or a rehearsal lab).
func ReadNodeScript(ctx context.Context, n node.Node, c Catalog) (*NodeScript, error) {
	data, err := n.ReadFile(ctx, NodeBootkube)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", NodeBootkube, n, err)
	}
	helpers := map[string][]byte{}
	for _, p := range helperPaths(data) {
		h, err := n.ReadFile(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s on %s: %w", p, n, err)
		}
		helpers[p] = h
	}
	b, err := ParseBootkube(n.String()+":"+NodeBootkube, data, helpers)
	if err != nil {
		return nil, err
	}
	return &NodeScript{Script: b, Blocks: c.MapScript(b)}, nil
}

// helperPaths are the /usr/local/bin files a script sources.
func helperPaths(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if m := sourceRE.FindStringSubmatch(l); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// LocalScript parses a bootkube.sh on this machine; the helpers it sources
// are read from the same directory when they are there.
func LocalScript(file string, data []byte, readFile func(string) ([]byte, error), c Catalog) (*NodeScript, error) {
	helpers := map[string][]byte{}
	for _, p := range helperPaths(data) {
		if h, err := readFile(path.Join(path.Dir(file), path.Base(p))); err == nil {
			helpers[p] = h
		}
	}
	b, err := ParseBootkube(file, data, helpers)
	if err != nil {
		return nil, err
	}
	return &NodeScript{Script: b, Blocks: c.MapScript(b)}, nil
}

// NodeRelease reads the release the node runs: the VERSION stage 02 wrote,
// else the release image's metadata (`oc adm release info`, with the
// installer's mirror configuration, as bootkube.sh computes VERSION).
func NodeRelease(ctx context.Context, n node.Node) (string, error) {
	if data, err := n.ReadFile(ctx, ImagesFile); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "VERSION="); ok && strings.Trim(v, `'"`) != "" {
				return strings.Trim(v, `'"`), nil
			}
		}
	}
	out, err := node.Output(ctx, n, releaseInfoCommand)
	if err != nil {
		return "", fmt.Errorf("read the release of %s from its release image: %w", n, err)
	}
	v := strings.TrimSpace(string(out))
	if _, err := ParseVersion(v); err != nil {
		return "", fmt.Errorf("release image of %s: %w", n, err)
	}
	return v, nil
}

const releaseInfoCommand = `. /usr/local/bin/release-image.sh >/dev/null 2>&1 || exit 3
cd /opt/openshift 2>/dev/null || true
mirror=()
if [ -f manifests/image-content-source-policy.yaml ]; then mirror=(--icsp-file=manifests/image-content-source-policy.yaml)
elif [ -f manifests/image-digest-mirror-set.yaml ]; then mirror=(--idms-file=manifests/image-digest-mirror-set.yaml); fi
oc adm release info -o 'jsonpath={.metadata.version}' "${mirror[@]}" "${RELEASE_IMAGE_DIGEST:-${RELEASE_IMAGE}}"`

// RunNodeScript runs stage s with the node's own bootkube.sh: the copy that
// stops before the next stage is written to ReplayPath(s) and run as root.
// Its guards decide what is skipped; with Force the markers of the stage's
// steps are removed first, so the guards let those steps run again.
func (r *Runner) RunNodeScript(ctx context.Context, s *Stage, ns *NodeScript, opts Options) (Outcome, error) {
	oc := Outcome{Stage: s, Number: s.Number, Slug: s.Slug, Reason: ns.Describe()}
	// As in Run: the state read by the caller's preflight serves this
	// one, and none of it outlives the script.
	defer r.forget()
	if !opts.Preflighted {
		r.forget()
	}
	script, err := ns.BuildReplay(s)
	if err != nil {
		return oc, &StageError{Stage: s, Err: err}
	}
	if opts.DryRun {
		_, err := opts.DryRunOut.Write(append(script, '\n'))
		oc.Result = ResultDryRun
		return oc, err
	}
	if err := r.PreflightNodeScript(ctx, s, ns, opts); err != nil {
		return oc, err
	}
	if opts.Force || r.Vars.Force {
		var rm []string
		for _, st := range ns.Block(s) {
			if st.Marker != "" {
				rm = append(rm, node.ShellQuote(path.Join(AssetDir, st.Marker)))
			}
		}
		if len(rm) > 0 {
			if _, err := node.Output(ctx, r.Node, "rm -f -- "+strings.Join(rm, " ")); err != nil {
				return oc, &StageError{Stage: s, Err: fmt.Errorf("--force: remove the markers: %w", err)}
			}
		}
	}
	oc.Result, oc.Duration, err = r.runScript(ctx, s, script, ReplayPath(s), ns.Describe())
	if err == nil && opts.Validate {
		if err = r.validate(ctx, s, r.Vars); err != nil {
			oc.Result = ResultFailure
		}
	}
	if err != nil {
		return oc, &StageError{Stage: s, Err: err}
	}
	return oc, nil
}

// PreflightNodeScript refuses, before anything runs, a replay of stage s
// with the node's script that would do a later stage's work, and a
// --force that would break a later stage (Catalog.CheckForce). The copy
// stops only where a later step records its start: a later step whose
// marker exists is skipped by its guard, and the unmarked work after it
// (stage 14 removes the bootstrap MCO pod) would run in the replay of s.
func (r *Runner) PreflightNodeScript(ctx context.Context, s *Stage, ns *NodeScript, opts Options) error {
	st, err := r.NodeState(ctx)
	if err != nil {
		return err
	}
	if opts.Force || r.Vars.Force {
		if err := r.Catalog.CheckForce(st, []*Stage{s}, r.Vars.Version); err != nil {
			return err
		}
	}
	for _, step := range ns.Script.Steps {
		if step.Stage <= s.Number || step.Marker == "" || step.SingleNode {
			continue
		}
		has, err := st.Marker(ctx, r.Node, step.Marker)
		if err != nil {
			return err
		}
		if !has {
			continue
		}
		later := fmt.Sprintf("stage %02d", step.Stage)
		if ls, lerr := r.Catalog.Lookup(fmt.Sprint(step.Stage)); lerr == nil {
			later = fmt.Sprintf("stage %s (%s)", ls.ID(), ls.Slug)
		}
		return &RefusedError{Stage: s, Reason: fmt.Sprintf(
			"stage %s (%s) is behind this node: %s has run (%s exists). The node's script stops only where a later step starts, and %s's guard skips that step, so the replay would go on into later stages and do their unmarked work (after cvo-overrides, stage 14 removes the bootstrap MCO pod). Nothing ran; `bootlab stage status` shows where the node is",
			s.ID(), s.Slug, later, step.Marker, step.Name)}
	}
	return nil
}
