package stagecmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/stages"
)

// ListOptions are the options of `stage list`.
type ListOptions struct {
	Target Target
	Output string
	// Bootkube is a local copy of a node's bootkube.sh to map.
	Bootkube string
}

// NewCmdList builds `stage list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the stages: number, bootkube name, script, bootkube steps and markers",
		Long: `List the fifteen stages and the bootkube steps each holds.

With --bootkube FILE, or on a lab whose bootstrap node has
/usr/local/bin/bootkube.sh (--host/--local name a node), the map comes from
that script: each of its named steps in script order, under the stage that
holds it by bootkube name. A step bootlab's catalog does not know (a newer
release) joins the stage of the known step before it and is shown as new;
steps that run only for a single node (bootstrap-in-place) are shown as such.
Without a script, the catalog of the annotated scripts is listed.`,
		Example: `  bootlab stage list
  bootlab stage list --bootkube ./bootkube.sh -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "wide", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runList(cmd, f, opts)
		},
	}
	addVersionFlags(cmd, &opts.Target)
	addNodeFlags(cmd, &opts.Target)
	addBootkubeFlag(cmd, &opts.Bootkube, "map this copy of a node's bootkube.sh (helpers it sources are read from its directory)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide or json")
	return cmd
}

// listWidth is what the default `stage list` table fits in.
const listWidth = 100

// printNarrowList prints the catalog in listWidth columns: each stage with
// its bootkube steps, a step's marker only where it is not NAME.done, and
// what a release lacks. `-o wide` has every column.
func printNarrowList(out io.Writer, entries []listEntry, v stages.Version) error {
	const stageCol = 36
	fmt.Fprintf(out, "%-4s%-*s%s\n", "NO", stageCol, "STAGE", "BOOTKUBE STEPS (marker NAME.done unless shown)")
	for _, e := range entries {
		var items []string
		for _, st := range e.Steps {
			if strings.HasPrefix(st.Name, "(") {
				continue // what the stage does besides its named steps: -o wide
			}
			item := st.Name
			switch {
			case st.Marker == "":
				item += " (no marker)"
			case st.Marker != st.Name+".done":
				item += " (" + st.Marker + ")"
			}
			if st.Since != "" && v.Less(stages.MustVersion(st.Since)) {
				item += " [" + st.Since + "+]"
			}
			items = append(items, item)
		}
		if len(items) == 0 {
			items = []string{"(no named step; see -o wide)"}
		}
		if e.Skipped != "" {
			items = append(items, "[not in "+v.String()+"]")
		}
		lines := wrapItems(items, listWidth-4-stageCol)
		for i, l := range lines {
			no, slug := "", ""
			if i == 0 {
				no, slug = fmt.Sprintf("%02d", e.Number), e.Slug
			}
			fmt.Fprintf(out, "%-4s%-*s%s\n", no, stageCol, slug, l)
		}
	}
	_, err := fmt.Fprintln(out, "\n`bootlab stage list -o wide` adds the script names and what each stage does besides its steps.")
	return err
}

// wrapItems joins items with ", " into lines of at most width runes.
func wrapItems(items []string, width int) []string {
	var lines []string
	cur := ""
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		switch {
		case cur == "":
			cur = it
		case len(cur)+1+len(it) <= width:
			cur += " " + it
		default:
			lines = append(lines, cur)
			cur = it
		}
	}
	return append(lines, cur)
}

// wrapWords breaks text into lines of at most width runes, between words.
func wrapWords(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		switch {
		case cur == "":
			cur = w
		case len([]rune(cur))+1+len([]rune(w)) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	return append(lines, cur)
}

// stageListDoc is `stage list -o json`: the stages of a release, from
// bootlab's catalog or a node's bootkube.sh.
type stageListDoc struct {
	Version string `json:"version,omitempty"`
	// Release says whether bootlab's catalog of Version was read upstream
	// or inferred (catalog listings only).
	Release *stages.Evidence `json:"release,omitempty"`
	Source  string           `json:"source"`
	Stages  []listEntry      `json:"stages"`
}

// listEntry is one stage as `stage list -o json` prints it.
type listEntry struct {
	Number  int        `json:"number"`
	Slug    string     `json:"slug"`
	Script  string     `json:"script"`
	File    string     `json:"file"`
	Short   string     `json:"short"`
	Steps   []listStep `json:"steps"`
	Done    []string   `json:"doneWhen,omitempty"`
	Skipped string     `json:"skipped,omitempty"`
	// Gates are the stage's release-specific behaviours in this release.
	Gates []listGate `json:"gates,omitempty"`
}

// listGate is one release-specific behaviour and its evidence.
type listGate struct {
	Releases string `json:"releases"`
	What     string `json:"what"`
	stages.Evidence
}

type listStep struct {
	Name   string `json:"name"`
	Marker string `json:"marker,omitempty"`
	// Optional markers are written only when a non-fatal check succeeds.
	Optional bool   `json:"optional,omitempty"`
	Since    string `json:"since,omitempty"`
	// The rest describe a step of a node's script.
	Guard      string `json:"guard,omitempty"`
	Line       int    `json:"line,omitempty"`
	File       string `json:"file,omitempty"`
	New        bool   `json:"new,omitempty"`
	SingleNode bool   `json:"singleNode,omitempty"`
}

func runList(cmd *cobra.Command, f *cmdutil.Factory, opts *ListOptions) error {
	if opts.Bootkube != "" {
		ns, err := localScript(opts.Bootkube)
		if err != nil {
			return err
		}
		return printScriptMap(f, ns, opts.Output)
	}
	t := &opts.Target
	r, err := t.resolveVersion(cmd.Context(), f, true)
	if err != nil {
		return err
	}
	// A lab that is up, or a node named by flags: map the node's own script.
	if t.Node != nil || t.Host != "" || t.Local || (r.stateErr == nil && len(r.spec.NodesByRole(spec.RoleBootstrap)) > 0) {
		ns, err := listNodeScript(cmd.Context(), f, t, r)
		if err != nil {
			if t.Node != nil || t.Host != "" || t.Local {
				return err
			}
			f.Status.Infof("could not read the bootstrap node's bootkube.sh (%v): listing bootlab's catalog", err)
		} else if ns != nil {
			return printScriptMap(f, ns, opts.Output)
		}
	}
	if err := r.vars.Version.CheckSupported(); err != nil {
		return cmdutil.WithCode(cmdutil.ExitInvalid, err)
	}
	entries := catalogEntries(r.vars.Version)
	rel, _ := stages.ReleaseOf(r.vars.Version)
	if opts.Output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "StageList", stageListDoc{Version: r.vars.Version.String(), Release: &rel.Evidence, Source: "bootlab's catalog", Stages: entries})
	}
	fmt.Fprintf(f.Streams.Out, "bootkube.sh of OpenShift %s, as %d stages (markers live in %s):\n", r.vars.Version, len(entries), stages.AssetDir)
	if note := releaseNote(r.vars.Version); note != "" {
		fmt.Fprintln(f.Streams.Out, strings.Join(wrapWords(note, listWidth), "\n"))
	}
	fmt.Fprintf(f.Streams.Out, "Releases: %s (see stage explain).\n\n", stages.VerifiedReleases())
	if opts.Output == "table" {
		return printNarrowList(f.Streams.Out, entries, r.vars.Version)
	}
	return printWideList(f.Streams.Out, entries, r.vars.Version)
}

// catalogEntries are bootlab's stages as release v runs them: their
// bootkube steps, markers, gates and whether v skips them.
func catalogEntries(v stages.Version) []listEntry {
	var entries []listEntry
	for _, s := range stages.Default() {
		e := listEntry{Number: s.Number, Slug: s.Slug, Script: s.Script, File: "scripts/" + s.ScriptFile(),
			Short: s.Short, Done: s.Done, Skipped: s.SkipReason(v)}
		for _, g := range s.GatesFor(v) {
			e.Gates = append(e.Gates, listGate{Releases: g.Releases(), What: g.What, Evidence: g.Evidence})
		}
		for _, st := range s.Steps {
			ls := listStep{Name: st.Name, Marker: st.Marker, Optional: st.Optional}
			if !st.Since.IsZero() {
				ls.Since = st.Since.String()
			}
			e.Steps = append(e.Steps, ls)
		}
		entries = append(entries, e)
	}
	return entries
}

// printWideList is the -o wide table: a row per bootkube step, with the
// marker that says it ran and what release v changes about it.
func printWideList(out io.Writer, entries []listEntry, v stages.Version) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NO\tSTAGE\tSCRIPT\tBOOTKUBE STEPS\tMARKERS")
	for _, e := range entries {
		for i, st := range e.Steps {
			no, slug, script := "", "", ""
			if i == 0 {
				no, slug, script = fmt.Sprintf("%02d", e.Number), e.Slug, e.Script
			}
			m := st.Marker
			if m == "" && !strings.HasPrefix(st.Name, "(") {
				m = "(none: runs every time)"
			}
			if st.Optional {
				m += " (only on success; never fails)"
			}
			if st.Since != "" && v.Less(stages.MustVersion(st.Since)) {
				m += " (not in " + v.String() + ": arrived in " + st.Since + ")"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", no, slug, script, st.Name, m)
		}
		if e.Skipped != "" {
			fmt.Fprintf(w, "\t\t\t  skipped: %s\t\n", strings.TrimPrefix(e.Skipped, "OpenShift "+v.String()+" has no such step: "))
		}
	}
	return w.Flush()
}

func listNodeScript(ctx context.Context, f *cmdutil.Factory, t *Target, r *resolved) (*stages.NodeScript, error) {
	node, closeNode, err := t.connect(ctx, f, r)
	if err != nil {
		return nil, err
	}
	defer closeNode()
	return nodeScript(ctx, f, node)
}

// printScriptMap prints the stage map of a node's script.
func printScriptMap(f *cmdutil.Factory, ns *stages.NodeScript, format string) error {
	var entries []listEntry
	for _, b := range ns.Blocks {
		s := b.Stage
		e := listEntry{Number: s.Number, Slug: s.Slug, Script: s.Script, File: "scripts/" + s.ScriptFile(), Short: s.Short, Steps: []listStep{}}
		for _, st := range b.Steps {
			e.Steps = append(e.Steps, listStep{Name: st.Name, Marker: st.Marker, Guard: st.Guard, Line: st.Line,
				File: st.File, New: st.New, SingleNode: st.SingleNode})
		}
		entries = append(entries, e)
	}
	if format == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "StageList", stageListDoc{Version: ns.Release, Source: ns.Describe(), Stages: entries})
	}
	fmt.Fprintf(f.Streams.Out, "%s, as %d stages (markers live in %s):\n\n", ns.Describe(), len(entries), stages.AssetDir)
	w := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NO\tSTAGE\tLINE\tBOOTKUBE STEP\tMARKER\tNOTE")
	for _, e := range entries {
		if len(e.Steps) == 0 {
			note := "no step of this stage in the script"
			if e.Slug == "release-image" {
				note = "no named step: image_for and VERSION, before the steps"
			}
			fmt.Fprintf(w, "%02d\t%s\t\t-\t\t%s\n", e.Number, e.Slug, note)
			continue
		}
		for i, st := range e.Steps {
			no, slug := "", ""
			if i == 0 {
				no, slug = fmt.Sprintf("%02d", e.Number), e.Slug
			}
			m := st.Marker
			if m == "" {
				m = "(none: runs every time)"
				if st.Guard != "" {
					m = "(none; skipped once " + st.Guard + " exists)"
				}
			}
			var notes []string
			if st.New {
				notes = append(notes, "new: not in bootlab's catalog")
			}
			if st.SingleNode {
				notes = append(notes, "single node only (bootstrap-in-place)")
			}
			if st.File != "" {
				notes = append(notes, "in "+st.File)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", no, slug, st.Line, st.Name, m, strings.Join(notes, "; "))
		}
	}
	return w.Flush()
}
