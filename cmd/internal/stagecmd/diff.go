package stagecmd

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/scripts"
	"github.com/bootlab/bootlab/stages"
)

// DiffOptions are the options of `stage diff`.
type DiffOptions struct {
	Target   Target
	Stage    string
	Bootkube string
	Context  int
}

// NewCmdDiff builds `stage diff`.
func NewCmdDiff(f *cmdutil.Factory, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff STAGE",
		Short: "Show the node's bootkube.sh block of a stage beside bootlab's annotated script",
		Long: `Print the steps of a stage in the node's own /usr/local/bin/bootkube.sh (or a
copy given with --bootkube), then a unified diff from that block to bootlab's
annotated script scripts/NN-<slug>.sh: what this release does that the
annotated stage does differently. Tabs are shown as four spaces on both sides.`,
		Example: `  bootlab stage diff 07
  bootlab stage diff etcd-bootstrap --bootkube ./bootkube.sh`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Stage = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runDiff(cmd, f, opts)
		},
	}
	addVersionFlags(cmd, &opts.Target)
	addNodeFlags(cmd, &opts.Target)
	addBootkubeFlag(cmd, &opts.Bootkube, "compare this copy of a node's bootkube.sh instead of the node's")
	cmd.Flags().IntVarP(&opts.Context, "unified", "U", 3, "lines of context in the diff")
	return cmd
}

func runDiff(cmd *cobra.Command, f *cmdutil.Factory, opts *DiffOptions) error {
	s, err := stages.Default().Lookup(opts.Stage)
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	var ns *stages.NodeScript
	if opts.Bootkube != "" {
		if ns, err = localScript(opts.Bootkube); err != nil {
			return err
		}
	} else {
		ctx := cmd.Context()
		_, node, closeNode, err := opts.Target.reach(ctx, f, true)
		if err != nil {
			return err
		}
		defer closeNode()
		if ns, err = nodeScript(ctx, f, node); err != nil {
			return err
		}
		if ns == nil {
			return cmdutil.UsageErrorf("%s has no %s (not a bootstrap node, or a rehearsal lab): give a copy with --bootkube FILE", node, stages.NodeBootkube)
		}
	}
	annotated, err := fs.ReadFile(scripts.FS, s.ScriptFile())
	if err != nil {
		return fmt.Errorf("scripts/%s is not in this build: %w", s.ScriptFile(), err)
	}
	return writeDiff(f, ns, s, string(annotated), opts.Context)
}

func writeDiff(f *cmdutil.Factory, ns *stages.NodeScript, s *stages.Stage, annotated string, context int) error {
	out := f.Streams.Out
	first, block := ns.BlockLines(s)
	steps := ns.Block(s)
	fmt.Fprintf(out, "# stage %s in the %s\n", s.Label(), ns.Describe())
	if len(steps) == 0 && len(block) == 0 {
		fmt.Fprintf(out, "#   no step of this stage: the release does not have it\n")
	}
	for _, st := range steps {
		var notes []string
		if st.Marker != "" {
			notes = append(notes, "marker "+st.Marker)
		}
		if st.Guard != "" {
			notes = append(notes, "skipped once "+st.Guard+" exists")
		}
		if st.New {
			notes = append(notes, "new: bootlab's annotated script does not have it")
		}
		if st.SingleNode {
			notes = append(notes, "single node only")
		}
		if st.File != "" {
			notes = append(notes, "code in "+st.File)
		}
		fmt.Fprintf(out, "#   line %d: %s (%s)\n", st.Line, st.Name, strings.Join(notes, "; "))
	}
	var catalogSteps []string
	for _, st := range s.Steps {
		if !strings.HasPrefix(st.Name, "(") {
			catalogSteps = append(catalogSteps, st.Name)
		}
	}
	if len(catalogSteps) > 0 {
		fmt.Fprintf(out, "# bootlab's annotated script scripts/%s has: %s\n", s.ScriptFile(), strings.Join(catalogSteps, ", "))
	}
	from := fmt.Sprintf("%s lines %d-%d", ns.Describe(), first, first+len(block)-1)
	if len(block) == 0 {
		from = ns.Describe() + " (nothing)"
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        splitLines(strings.Join(block, "\n")),
		B:        splitLines(annotated),
		FromFile: from,
		ToFile:   "scripts/" + s.ScriptFile() + " (" + sourceDescBootlab + ")",
		Context:  context,
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(out, text)
	return err
}

// splitLines splits text into lines with their newlines, tabs expanded.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(strings.ReplaceAll(text, "\t", "    "), "\n")
	if last := len(lines) - 1; lines[last] == "" {
		lines = lines[:last]
	} else {
		lines[last] += "\n"
	}
	return lines
}
