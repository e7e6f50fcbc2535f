package labcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// SSHOptions are the options of `lab ssh`.
type SSHOptions struct {
	Spec    cmdutil.SpecFlags
	Node    string
	Command []string
	// SSH is the ssh client binary.
	SSH string
}

// NewCmdSSH builds `lab ssh NODE [-- cmd...]`.
func NewCmdSSH(f *cmdutil.Factory, runF func(*SSHOptions) error) *cobra.Command {
	opts := &SSHOptions{}
	cmd := &cobra.Command{
		Use:   "ssh NODE [-- COMMAND...]",
		Short: "Log in to a node as core with the lab's SSH key",
		Long: `Run ssh to core@<node IP> with the lab's key. Host keys go to the lab's own
known_hosts file, so your ~/.ssh/known_hosts is never touched (lab VMs get
new host keys every time they are rebuilt).`,
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
	cmd.Flags().StringVar(&opts.SSH, "ssh", "ssh", "ssh client to run")
	return cmd
}

// SSHArgs are the ssh arguments to reach node n of spec s.
func SSHArgs(s *lab.Spec, n lab.Node, command []string) []string {
	args := []string{
		"-i", s.SSHKeyPath(),
		"-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + s.KnownHostsPath(),
		"-o", "StrictHostKeyChecking=accept-new",
		"-o", "ConnectTimeout=10",
		"core@" + n.IP,
	}
	if len(command) > 0 {
		args = append(args, "--")
		args = append(args, command...)
	}
	return args
}

func runSSH(ctx context.Context, f *cmdutil.Factory, opts *SSHOptions) error {
	spec, _, err := cmdutil.BuiltSpec(&opts.Spec)
	if err != nil {
		return err
	}
	n, ok := spec.Node(opts.Node)
	if !ok {
		return cmdutil.UsageErrorf("no node %q in lab %s (nodes: %s)", opts.Node, spec.Name, nodeNames(spec))
	}
	if spec.Profile == lab.ProfileProbe && !(spec.Rehearsal() && n.Role == lab.RoleBootstrap) {
		if spec.Rehearsal() {
			return fmt.Errorf("lab %s is a rehearsal lab: only its bootstrap node runs an SSH server (`bootlab lab ssh bootstrap`); read %s's report with `bootlab lab console %[2]s`, or check the whole lab with `bootlab lab verify`", spec.Name, n.Name)
		}
		return fmt.Errorf("lab %s is a probe lab: its nodes run bootlab's probe agent and no SSH server; read %s's report with `bootlab lab console %[2]s`, or check the whole lab with `bootlab lab verify`. `bootlab lab up --manual-bootstrap` builds a rehearsal lab, whose bootstrap node you can ssh to and run the stages on", spec.Name, n.Name)
	}
	if _, err := os.Stat(spec.SSHKeyPath()); err != nil {
		return fmt.Errorf("lab SSH key %s missing: run `bootlab lab up` first", spec.SSHKeyPath())
	}
	bin, err := exec.LookPath(opts.SSH)
	if err != nil {
		return fmt.Errorf("%s not found: apt-get install -y openssh-client", opts.SSH)
	}
	c := exec.CommandContext(ctx, bin, SSHArgs(spec, n, opts.Command)...)
	c.Stdin, c.Stdout, c.Stderr = f.Streams.In, f.Streams.Out, f.Streams.ErrOut
	f.Log.Debug("running ssh", "args", c.Args)
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// ssh already said why; exit with its code (255: ssh itself failed).
		return cmdutil.WithCode(ee.ExitCode(), cmdutil.ErrSilent)
	}
	return err
}
