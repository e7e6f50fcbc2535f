package stagecmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/stages"
)

// ListOptions are the options of `stage list`.
type ListOptions struct {
	Target Target
	Output string
}

// NewCmdList builds `stage list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the stages: number, bootkube name, script, bootkube steps and markers",
		Args:  cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runList(f, opts)
		},
	}
	addVersionFlags(cmd, &opts.Target)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
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
}

type listStep struct {
	Name   string `json:"name"`
	Marker string `json:"marker,omitempty"`
	// Optional markers are written only when a non-fatal check succeeds.
	Optional bool   `json:"optional,omitempty"`
	Since    string `json:"since,omitempty"`
}

func runList(f *cmdutil.Factory, opts *ListOptions) error {
	r, err := opts.Target.resolve()
	if err != nil {
		return err
	}
	var entries []listEntry
	for _, s := range stages.Default() {
		e := listEntry{Number: s.Number, Slug: s.Slug, Script: s.Script, File: "scripts/" + s.ScriptFile(),
			Short: s.Short, Done: s.Done, Skipped: s.SkipReason(r.vars.Version)}
		for _, st := range s.Steps {
			ls := listStep{Name: st.Name, Marker: st.Marker, Optional: st.Optional}
			if !st.Since.IsZero() {
				ls.Since = st.Since.String()
			}
			e.Steps = append(e.Steps, ls)
		}
		entries = append(entries, e)
	}
	if opts.Output == "json" {
		data, err := json.MarshalIndent(entries, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f.Streams.Out, string(data))
		return err
	}
	fmt.Fprintf(f.Streams.Out, "bootkube.sh of OpenShift %s, as %d stages (markers live in %s):\n\n", r.vars.Version, len(entries), stages.AssetDir)
	w := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
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
			if st.Since != "" && r.vars.Version.Less(stages.MustVersion(st.Since)) {
				m += " (not in " + r.vars.Version.String() + ": arrived in " + st.Since + ")"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", no, slug, script, st.Name, m)
		}
		if e.Skipped != "" {
			fmt.Fprintf(w, "\t\t\t  skipped: %s\t\n", strings.TrimPrefix(e.Skipped, "OpenShift "+r.vars.Version.String()+" has no such step: "))
		}
	}
	return w.Flush()
}
