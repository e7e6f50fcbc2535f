package stagecmd

import (
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/docs"
	"github.com/bootlab/bootlab/internal/markdown"
	"github.com/bootlab/bootlab/stages"
)

// ExplainOptions are the options of `stage explain`.
type ExplainOptions struct {
	Stage string
	// Plain prints the markdown as written even on a terminal.
	Plain bool
}

// NewCmdExplain builds `stage explain`.
func NewCmdExplain(f *cmdutil.Factory, runF func(*ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{}
	cmd := &cobra.Command{
		Use:   "explain [STAGE]",
		Short: "Explain a stage: what and why, bootkube's equivalent, files, pods, checks, failures",
		Example: `  bootlab stage explain 07
  bootlab stage explain etcd-bootstrap --plain
  bootlab stage explain            # the overview: every stage in order`,
		Long: `Print the page of a stage (docs/stages/NN-<slug>.md), or the overview without
a stage. On a terminal the page is rendered and wrapped to its width (GLAMOUR_STYLE
picks the style: dark, light, ascii ...) and shown through a pager when it is
longer than the screen: $BOOTLAB_PAGER, else $PAGER, else "less -R"; set
BOOTLAB_PAGER="" for none. Piped, or with NO_COLOR or TERM=dumb, it is the
markdown as written.`,
		Args: cmdutil.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Stage = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runExplain(cmd, f, opts)
		},
		ValidArgsFunction: completeStages,
	}
	cmd.Flags().BoolVar(&opts.Plain, "plain", false, "print plain markdown even on a terminal")
	return cmd
}

func runExplain(cmd *cobra.Command, f *cmdutil.Factory, opts *ExplainOptions) error {
	name, number := "stages/README.md", 0
	var stage *stages.Stage
	if opts.Stage != "" {
		s, err := stages.Default().Lookup(opts.Stage)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, err)
		}
		name, number, stage = "stages/"+s.DocFile(), s.Number, s
	}
	page, err := fs.ReadFile(docs.Stages, name)
	if err != nil {
		return fmt.Errorf("explain: docs/%s is not in this build: %w", name, err)
	}
	// How each release's facts are known, and what plays a release image's
	// part on a rehearsal lab, are said on the page itself.
	page = append(page, releasesSection(stage)...)
	page = append(page, rehearsalSection(number)...)
	out := markdown.SystemOutput(f.Streams.Out, f.Streams.ErrOut, f.Streams.OutTTY)
	return markdown.Show(cmd.Context(), out, page, opts.Plain)
}
