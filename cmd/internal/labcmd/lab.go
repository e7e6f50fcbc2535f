// Package labcmd holds the `bootlab lab ...` commands. They parse flags into
// Options and call package lab and its subpackages; they hold no lab logic.
package labcmd

import (
	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// NewCmdLab builds the `lab` command group.
func NewCmdLab(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build, check and tear down an OpenShift UPI lab on libvirt",
		Example: `  bootlab lab init --name ux1 -f ux1.yaml
  sudo bootlab lab up -f ux1.yaml
  sudo bootlab lab verify -f ux1.yaml
  sudo bootlab lab down -f ux1.yaml`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.UnknownSubcommand,
	}
	cmd.AddCommand(
		NewCmdInit(f, nil),
		NewCmdConfig(f, nil),
		NewCmdUp(f, nil),
		NewCmdDown(f, nil),
		NewCmdStatus(f, nil),
		NewCmdConsole(f, nil),
		NewCmdSSH(f, nil),
		NewCmdReboot(f, nil),
		NewCmdDNSProxy(f, nil),
		NewCmdVerify(f, nil),
		NewCmdProbeImage(f),
		NewCmdPreflight(f, nil),
		NewCmdPivot(f, nil),
		NewCmdWait(f, nil),
		NewCmdApproveCSRs(f, nil),
		NewCmdKubeconfig(f, nil),
		NewCmdKubectl(f, nil),
		NewCmdGather(f, nil),
		NewCmdBreak(f, nil),
		NewCmdDiagnose(f, nil),
		NewCmdList(f, nil),
		NewCmdCheckpoint(f, nil),
		NewCmdGraph(f, nil),
	)
	return cmd
}

// printWarnings tells, on stderr, what a valid spec may still get wrong
// (lab.Spec.Warnings), before the command acts on it.
func printWarnings(f *cmdutil.Factory, spec *spec.Spec) {
	for _, w := range spec.Warnings() {
		f.Say("warn", "%s", w)
	}
}
