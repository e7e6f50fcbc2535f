package stagecmd

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/stages"
)

// HandoffCommand is what `stage handoff` runs on the bootstrap node
// (lab.HandoffCommand: the lab that masked the unit says how to unmask it).
const HandoffCommand = lab.HandoffCommand

// HandoffOptions are the options of `stage handoff`.
type HandoffOptions struct {
	Target Target
	DryRun bool
}

// NewCmdHandoff builds `stage handoff`.
func NewCmdHandoff(f *cmdutil.Factory, runF func(*HandoffOptions) error) *cobra.Command {
	opts := &HandoffOptions{}
	cmd := &cobra.Command{
		Use:   "handoff",
		Short: "Give the bootstrap back to bootkube.service: unmask and start it",
		Example: `  bootlab stage handoff --dry-run
  bootlab stage handoff --name demo`,
		Long: `A lab built with openshift.manualBootstrap: true has bootkube.service masked,
so nothing happens until you run stages (the installer's unit file was kept at
` + lab.SavedBootkubeUnitPath + `). handoff runs, on the bootstrap node:

  ` + HandoffCommand + `

bootkube.sh then starts from the top and skips every step whose .done marker
your stages wrote, exactly as it does after one of its own restarts, and
finishes the rest. Follow it with:

  journalctl -b -f -u bootkube.service

If /opt/openshift/.bootkube.done exists, bootkube.service will not start
(ConditionPathExists=!/opt/openshift/.bootkube.done): the work is done.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runHandoff(cmd, f, opts)
		},
	}
	addVersionFlags(cmd, &opts.Target)
	addNodeFlags(cmd, &opts.Target)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the command instead of running it")
	return cmd
}

func runHandoff(cmd *cobra.Command, f *cmdutil.Factory, opts *HandoffOptions) error {
	if opts.DryRun {
		_, err := fmt.Fprintln(f.Streams.Out, HandoffCommand)
		return err
	}
	ctx := cmd.Context()
	r, target, closeNode, err := opts.Target.reach(ctx, f, false)
	if err != nil {
		return err
	}
	defer closeNode()
	done := path.Join(stages.AssetDir, stages.BootkubeDone)
	if _, err := target.Stat(ctx, done); err == nil {
		return fmt.Errorf("%s exists on %s: bootkube.service will not start (its ConditionPathExists), and there is nothing left for it to do", done, target)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	st, err := stages.NodeStatus(ctx, target, stages.Default(), r.vars.Version)
	if err != nil {
		return err
	}
	if !r.spec.OpenShift.ManualBootstrap && opts.Target.Host == "" && !opts.Target.Local {
		f.Status.Infof("lab %q was not built with openshift.manualBootstrap: true, so bootkube.service was not masked; starting it anyway", r.spec.Name)
	}
	f.Status.Start("unmasking and starting bootkube.service on %s", target)
	out, err := node.Output(ctx, target, HandoffCommand)
	f.Status.End(err == nil)
	if err != nil {
		return fmt.Errorf("handoff on %s: %w (is this the bootstrap node of an OpenShift lab?)", target, err)
	}
	if len(out) > 0 {
		fmt.Fprint(f.Streams.ErrOut, string(out))
	}
	if st.Next != "" {
		f.Status.Infof("bootkube.sh resumes at stage %s; finished steps are skipped by their markers", st.Next)
	}
	f.Status.Infof("follow it: ssh to the node and run `journalctl -b -f -u bootkube.service`")
	return nil
}
