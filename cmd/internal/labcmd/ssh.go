package labcmd

import (
	"context"
	"fmt"
	"strings"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// SSHOptions are the options of `lab ssh`.
type SSHOptions struct {
	Spec    cmdutil.SpecFlags
	Node    string
	Command []string
	// Port is the node's SSH port (22; tests point it elsewhere).
	Port int
}

// NewCmdSSH builds `lab ssh NODE [-- cmd...]`.
func NewCmdSSH(f *cmdutil.Factory, runF func(*SSHOptions) error) *cobra.Command {
	opts := &SSHOptions{Port: 22}
	cmd := &cobra.Command{
		Use:   "ssh NODE [-- COMMAND...]",
		Short: "Log in to a node as core with the lab's SSH key",
		Example: `  bootlab lab ssh bootstrap
  bootlab lab ssh master-0 --name demo -- sudo crictl ps
  bootlab lab ssh bootstrap -- ls /opt/openshift`,
		Long: `Log in to core@<node IP> with the lab's key, or run COMMAND there. Host keys
go to the lab's own known_hosts file, so your ~/.ssh/known_hosts is never
touched (lab VMs get new host keys every time they are rebuilt).

A lab on a remote hypervisor (libvirt.uri qemu+ssh://user@host/system) is
reached through that host's SSH connection, like ssh -J: the lab network
exists only there.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return cmdutil.UsageErrorf("lab ssh needs a NODE (see `bootlab lab status`)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Node = args[0]
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 1 {
					return cmdutil.UsageErrorf("put the remote command after --: lab ssh NODE -- COMMAND")
				}
				opts.Command = args[1:]
			} else if len(args) > 1 {
				return cmdutil.UsageErrorf("put the remote command after --: lab ssh NODE -- COMMAND")
			}
			if runF != nil {
				return runF(opts)
			}
			return runSSH(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	cmd.ValidArgsFunction = opts.Spec.CompleteNodes
	return cmd
}

func runSSH(ctx context.Context, f *cmdutil.Factory, opts *SSHOptions) error {
	l, spec, err := f.OpenBuiltLab(ctx, &opts.Spec)
	if err != nil {
		return err
	}
	defer l.Close()
	n, ok := spec.Node(opts.Node)
	if !ok {
		return cmdutil.UsageErrorf("no node %q in lab %s (nodes: %s)", opts.Node, spec.Name, nodeNames(spec))
	}
	if spec.Profile == labspec.ProfileProbe && !(spec.Rehearsal() && n.Role == labspec.RoleBootstrap) {
		if spec.Rehearsal() {
			return fmt.Errorf("lab %s is a rehearsal lab: only its bootstrap node runs an SSH server (`bootlab lab ssh bootstrap`); read %s's report with `bootlab lab console %[2]s`, or check the whole lab with `bootlab lab verify`", spec.Name, n.Name)
		}
		return fmt.Errorf("lab %s is a probe lab: its nodes run bootlab's probe agent and no SSH server; read %s's report with `bootlab lab console %[2]s`, or check the whole lab with `bootlab lab verify`. `bootlab lab up --manual-bootstrap` builds a rehearsal lab, whose bootstrap node you can ssh to and run the stages on", spec.Name, n.Name)
	}
	c, done, err := l.DialNode(ctx, n, lab.DialOptions{Port: opts.Port})
	if err != nil {
		return err
	}
	defer done()
	var code int
	if len(opts.Command) > 0 {
		// As ssh does: the words after -- make one command line for the
		// node's shell.
		code, err = c.Stream(ctx, strings.Join(opts.Command, " "), f.Streams.In, f.Streams.Out, f.Streams.ErrOut)
	} else {
		code, err = c.Shell(ctx, f.Streams.In, f.Streams.Out, f.Streams.ErrOut)
	}
	if err != nil {
		return err
	}
	if code != 0 {
		// The command said why; exit with its code, as ssh does.
		return cmdutil.WithCode(code, cmdutil.ErrSilent)
	}
	return nil
}
