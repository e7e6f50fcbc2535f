package stagecmd

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/docs"
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
		Long: `Print the page of a stage (docs/stages/NN-<slug>.md), or the overview without
a stage. On a terminal headings and code are highlighted; piped, it is plain markdown.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Stage = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runExplain(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Plain, "plain", false, "print plain markdown even on a terminal")
	return cmd
}

func runExplain(f *cmdutil.Factory, opts *ExplainOptions) error {
	name, number := "stages/README.md", 0
	if opts.Stage != "" {
		s, err := stages.Default().Lookup(opts.Stage)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, err)
		}
		name, number = "stages/"+s.DocFile(), s.Number
	}
	page, err := fs.ReadFile(docs.Stages, name)
	if err != nil {
		return fmt.Errorf("explain: docs/%s is not in this build: %w", name, err)
	}
	text := string(page) + rehearsalSection(number)
	// NO_COLOR (no-color.org) asks for plain text even on a terminal.
	if f.Streams.OutTTY && !opts.Plain && os.Getenv("NO_COLOR") == "" {
		text = renderTerminal(text)
	}
	_, err = fmt.Fprint(f.Streams.Out, text)
	return err
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// renderTerminal highlights markdown lightly: bold headings, coloured
// code, dimmed fences.
func renderTerminal(md string) string {
	const (
		bold  = "\x1b[1m"
		under = "\x1b[1;4m"
		cyan  = "\x1b[36m"
		dim   = "\x1b[2m"
		reset = "\x1b[0m"
	)
	var b strings.Builder
	inFence := false
	for _, line := range strings.SplitAfter(md, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		nl := line[len(trimmed):]
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inFence = !inFence
			b.WriteString(dim + trimmed + reset + nl)
		case inFence:
			b.WriteString(cyan + "    " + trimmed + reset + nl)
		case strings.HasPrefix(trimmed, "# "):
			b.WriteString(under + strings.TrimPrefix(trimmed, "# ") + reset + nl)
		case strings.HasPrefix(trimmed, "#"):
			b.WriteString(bold + strings.TrimLeft(trimmed, "# ") + reset + nl)
		default:
			b.WriteString(inlineCode.ReplaceAllString(trimmed, cyan+"$1"+reset) + nl)
		}
	}
	return b.String()
}
