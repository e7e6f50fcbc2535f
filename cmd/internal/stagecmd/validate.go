package stagecmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/stages"
)

// ValidateOptions are the options of `stage validate`.
type ValidateOptions struct {
	Target Target
	Stages []string
	All    bool
	NoLive bool
	// Wait is how long failing live checks are asked again once the
	// stage's files are all there.
	Wait   time.Duration
	Output string
}

// NewCmdValidate builds `stage validate`.
func NewCmdValidate(f *cmdutil.Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [STAGE...]",
		Short: "Check what stages produced on the node: files, modes, manifests, certificates, live services",
		Example: `  bootlab stage validate 07
  bootlab stage validate --all --name demo
  bootlab stage validate 12 --no-live -o json`,
		Long: `Read back what a stage left on the bootstrap node and check it: markers,
files and their modes, manifests parsed as their Kubernetes kinds (static pods
with their containers, hostNetwork and host paths), certificates unexpired, and
live answers where the stage starts something (etcd health, the MCS on 22623,
/readyz of the API). Exits 4 when a check fails.

What a stage starts answers a moment after its script returns (etcd after
stage 07 needs seconds, longer under TCG): when every file check of a stage
passes and only live checks fail, those are asked again every 2s for up to
--wait (default 1m; --wait 0 asks once). A stage whose files are missing is
reported at once. The kubectl checks first ask, with one curl, whether
anything answers https on the API's name: when nothing does (stage 13 not
run yet) they fail at once and say why, instead of waiting out kubectl's
retries of every request.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Stages = args
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if _, err := lookupAll(stages.Default(), args, opts.All); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runValidate(cmd, f, opts)
		},
		ValidArgsFunction: completeStages,
	}
	addVersionFlags(cmd, &opts.Target)
	addNodeFlags(cmd, &opts.Target)
	cmd.Flags().BoolVar(&opts.All, "all", false, "validate every stage")
	cmd.Flags().BoolVar(&opts.NoLive, "no-live", false, "only read files; do not ask running services")
	cmd.Flags().DurationVar(&opts.Wait, "wait", time.Minute, "ask failing live checks again for up to this long once the stage's files all pass (0: once)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runValidate(cmd *cobra.Command, f *cmdutil.Factory, opts *ValidateOptions) error {
	ctx := cmd.Context()
	sel, err := lookupAll(stages.Default(), opts.Stages, opts.All)
	if err != nil {
		return err
	}
	r, n, closeNode, err := opts.Target.reach(ctx, f, false)
	if err != nil {
		return err
	}
	defer closeNode()
	var run []*stages.Stage
	for _, s := range sel {
		if reason := s.SkipReason(r.vars.Version); reason != "" {
			f.Status.Infof("stage %s skipped: %s", s.Label(), reason)
			continue
		}
		run = append(run, s)
	}
	results := validateStages(ctx, f, n, r.vars, run, opts)
	if opts.Output == "json" {
		if err := cmdutil.WriteJSON(f.Streams.Out, "StageValidation", check.NewDoc(results)); err != nil {
			return err
		}
	} else if err := check.Write(f.Streams.Out, results, check.Options{GroupTitle: "STAGE"}); err != nil {
		return err
	}
	failed := len(check.Failed(results))
	if failed > 0 {
		return cmdutil.WithCode(cmdutil.ExitCheckFailed, fmt.Errorf("%d check(s) failed: `bootlab stage explain NN` lists the common failures of each stage", failed))
	}
	return nil
}

// validateStages validates each stage of run on n. What the checks of the
// stages read comes in one command, since each stage's own read is a
// command with programs on the node; once a stage has waited for its live
// checks, the stages left read afresh: what it waited for may have let
// their files appear.
func validateStages(ctx context.Context, f *cmdutil.Factory, n node.Node, vars stages.Vars, run []*stages.Stage, opts *ValidateOptions) []check.Result {
	results := []check.Result{}
	var read node.Node
	for i, s := range run {
		if read == nil && len(run)-i > 1 {
			read = stages.ReadChecks(ctx, n, run[i:], opts.NoLive)
		}
		f.Status.Start("validating stage %s", s.Label())
		told := false
		res := stages.Validate(ctx, n, s, vars, stages.ValidateOptions{SkipLive: opts.NoLive, Wait: opts.Wait, Read: read,
			Waiting: func(names []string, left time.Duration) {
				if !told {
					told = true
					f.Status.Infof("stage %s: waiting up to %s for what it started to answer: %s", s.Label(), opts.Wait, strings.Join(names, "; "))
				}
				f.Status.Update("%d live check(s) not answering yet, %s left", len(names), left.Round(time.Second))
			}})
		if told {
			read = nil
		}
		for i := range res {
			if res[i].Failed() {
				res[i].Fix = fmt.Sprintf("`bootlab stage explain %s` lists the common failures of stage %s", s.ID(), s.Label())
			}
		}
		f.Status.End(check.OK(res))
		results = append(results, res...)
	}
	return results
}
