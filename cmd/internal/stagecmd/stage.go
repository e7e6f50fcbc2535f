// Package stagecmd holds the `bootlab stage ...` commands. They parse flags
// into Options and call package stages; the stages themselves, their
// scripts and their checks live there.
package stagecmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/stages"
)

// NewCmdStage builds the `stage` command group.
func NewCmdStage(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stage",
		Short: "Replay the bootstrap node's bootkube.sh as numbered stages",
		Example: `  bootlab stage list
  sudo bootlab stage run 07
  sudo bootlab stage status
  sudo bootlab stage reset 07`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.UnknownSubcommand,
		Long: `bootkube.sh, run by bootkube.service on the bootstrap node, renders every
control-plane manifest with operator containers, starts a temporary control
plane and hands over to the masters. bootlab splits it into fifteen numbered
stages you can list, explain, run, validate and hand back to bootkube.

A stage is named by its number (07), bootkube's stage name (etcd-bootstrap)
or its script name (render-etcd). Stages run as root on the bootstrap node,
over SSH with the lab's key, or locally with --local.

On a lab bootlab built, stage run first checkpoints the bootstrap node as
before-NN; stage reset NN puts it back there in seconds (docs/checkpoints.md).`,
	}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdExplain(f, nil),
		NewCmdRun(f, nil),
		NewCmdValidate(f, nil),
		NewCmdStatus(f, nil),
		NewCmdHandoff(f, nil),
		NewCmdDiff(f, nil),
		NewCmdReset(f, nil),
	)
	return cmd
}

// Target is what every stage command needs to know about the lab: the
// spec, the OpenShift release to replay and how to reach the node.
type Target struct {
	Spec             cmdutil.SpecFlags
	OpenShiftVersion string
	ReleaseImage     string

	Host       string
	Port       int
	User       string
	Key        string
	KnownHosts string
	Local      bool
	ForceLocal bool

	// Node replaces the connection (tests).
	Node node.Node
}

func addVersionFlags(cmd *cobra.Command, t *Target) {
	cmdutil.AddTargetFlags(cmd, &t.Spec)
	fl := cmd.Flags()
	fl.StringVar(&t.OpenShiftVersion, "openshift-version", "", "OpenShift release whose bootkube.sh to replay (default: stage run reads the node's; else openshift.version of the lab spec); one the node contradicts is refused")
	fl.StringVar(&t.ReleaseImage, "release-image", "", "release image pull spec (default: the one the installer wrote on the node; another one is refused there)")
}

func addNodeFlags(cmd *cobra.Command, t *Target) {
	fl := cmd.Flags()
	fl.StringVar(&t.Host, "host", "", "node address (default: the lab's bootstrap node); a remote lab's nodes are reached through its hypervisor host")
	fl.IntVar(&t.Port, "port", 22, "SSH port")
	fl.StringVar(&t.User, "user", "core", "SSH user; commands run through sudo unless it is root")
	fl.StringVar(&t.Key, "key", "", "SSH private key (default: the lab key)")
	fl.StringVar(&t.KnownHosts, "known-hosts", "", "known_hosts file, which must exist (default: ssh/known_hosts in the lab directory, made when missing)")
	fl.BoolVar(&t.Local, "local", false, "run on this machine (bootlab runs on the bootstrap node itself)")
	fl.BoolVar(&t.ForceLocal, "force-local", false, "with --local: run even where this machine does not look like a bootstrap node")
}

// resolved is a Target with its spec loaded.
type resolved struct {
	spec *labspec.Spec
	vars stages.Vars
	// stateErr says why the lab state could not be read (the lab is not up).
	stateErr error
	// labUUID is the identity of the lab as built (its state's UUID): the
	// stage records written for it carry it, and only those are read back.
	labUUID string
	// The lab's files: its key, known_hosts and stage records and logs.
	sshKey, knownHosts, stageDir string
}

// resolveVersion loads the lab the target names and the release to replay;
// with anyVersion it also accepts a release
// the annotated scripts do not model (the node's own script runs it).
func (t *Target) resolveVersion(ctx context.Context, f *cmdutil.Factory, anyVersion bool) (*resolved, error) {
	r, err := t.open(ctx, f)
	if err != nil {
		return nil, err
	}
	spec := r.spec
	vs := t.OpenShiftVersion
	if vs == "" {
		vs = spec.OpenShift.Version
	}
	if vs == "" {
		vs = labspec.DefaultOpenShiftVersion
	}
	v, err := stages.ParseVersion(vs)
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--openshift-version: %w", err))
	}
	if err := v.CheckSupported(); err != nil && !anyVersion {
		return nil, cmdutil.WithCode(cmdutil.ExitInvalid, err)
	}
	domain := spec.Cluster.Domain()
	r.vars = stages.Vars{
		Version: v, APIURL: "api." + domain, APIIntURL: "api-int." + domain,
		ReleaseImage: t.ReleaseImage,
	}
	return r, nil
}

// open loads the lab the target names: the effective spec of its last
// `lab up`, which knows the real addresses, or (stateErr set) the flags'
// spec of a lab not up or not named. A lab directory holding another lab,
// one whose state cannot be read, or a flag the built lab contradicts is
// refused here as everywhere (never taken for "the lab is not up", which
// would act on the flags' spec instead).
func (t *Target) open(ctx context.Context, f *cmdutil.Factory) (*resolved, error) {
	// Stage commands run without a lab too (stage list, --host, --local).
	t.Spec.Optional = true
	l, err := f.OpenTarget(ctx, &t.Spec)
	if t.Spec.NoLab != nil {
		return t.unnamed(l)
	}
	if err != nil {
		return nil, err
	}
	defer l.Close()
	r := &resolved{spec: l.Spec(), sshKey: l.SSHKey(), knownHosts: l.KnownHosts(), stageDir: l.StageDir()}
	if !l.Built() {
		r.stateErr = cmdutil.NotUp(&t.Spec, l.Spec(), &lab.NotBuiltError{Lab: l.Spec().Name})
	} else {
		r.labUUID = l.UUID()
	}
	return r, nil
}

// unnamed is the target when no lab is named (stateErr says so): the
// flags' spec with every default, never a lab that default's name finds
// (a command never falls back to a lab the user did not name); the lab
// files are where that spec puts them, when l could be opened.
func (t *Target) unnamed(l *lab.Lab) (*resolved, error) {
	if l != nil {
		defer l.Close()
	}
	// Load again: with no lab named no file or standard input is read.
	spec, err := t.Spec.Load()
	if err != nil {
		return nil, err
	}
	r := &resolved{spec: spec, stateErr: t.Spec.NoLab}
	if l != nil {
		r.sshKey, r.knownHosts, r.stageDir = l.SSHKey(), l.KnownHosts(), l.StageDir()
	}
	return r, nil
}

// reach resolves the target (anyVersion as resolveVersion) and connects to
// its node: what a stage command that talks to one node starts with.
func (t *Target) reach(ctx context.Context, f *cmdutil.Factory, anyVersion bool) (*resolved, node.Node, func(), error) {
	r, err := t.resolveVersion(ctx, f, anyVersion)
	if err != nil {
		return nil, nil, nil, err
	}
	node, closeNode, err := t.connect(ctx, f, r)
	if err != nil {
		return nil, nil, nil, err
	}
	return r, node, closeNode, nil
}

// connect reaches the node: the injected one, the local machine, --host,
// or the lab's bootstrap node.
func (t *Target) connect(ctx context.Context, f *cmdutil.Factory, r *resolved) (node.Node, func(), error) {
	if t.Node != nil {
		return t.Node, func() {}, nil
	}
	if t.Local {
		if err := looksLikeBootstrapNode(bootstrapNodeMarks, t.ForceLocal); err != nil {
			return nil, nil, err
		}
		return node.NewLocal(), func() {}, nil
	}
	host := t.Host
	if host == "" {
		if r.stateErr != nil {
			return nil, nil, fmt.Errorf("%w; or reach a node with --host (or --local on the node itself)", r.stateErr)
		}
		if r.spec.Profile == labspec.ProfileProbe && !r.spec.Rehearsal() {
			return nil, nil, cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("lab %q is a probe lab built without manual bootstrap: its bootstrap node starts its services at boot and runs no SSH and no stages. Rebuild it as a rehearsal lab, whose bootstrap runs the stages: bootlab lab down && bootlab lab up --manual-bootstrap", r.spec.Name))
		}
		bs := r.spec.NodesByRole(labspec.RoleBootstrap)
		if len(bs) == 0 || bs[0].IP == "" {
			return nil, nil, cmdutil.UsageErrorf("lab %q has no bootstrap node (it was removed by `bootlab lab pivot`?): pass --host, or --local on the node", r.spec.Name)
		}
		host = bs[0].IP
	}
	key := t.Key
	if key == "" {
		key = r.sshKey
	}
	// The lab's own known_hosts is made when missing; one --known-hosts
	// names must exist.
	kh, own := t.KnownHosts, false
	if kh == "" {
		kh, own = r.knownHosts, true
	}
	// A lab on a remote hypervisor: its network exists only there, so the
	// node is reached through the hypervisor host's SSH connection.
	hyper := lab.LocalHop()
	if r.stateErr == nil && r.spec.Remote() {
		f.Status.Start("connecting to the hypervisor of lab %s", r.spec.Name)
		var err error
		hyper, err = hopOf(ctx, f, r.spec)
		f.Status.End(err == nil)
		if err != nil {
			return nil, nil, err
		}
	}
	f.Status.Start("connecting to %s@%s%s", t.User, host, via(hyper))
	dial := func() (*node.SSH, error) {
		// The lab's way into a node (lab.NodeSSH), with the flags on top.
		cfg := lab.NodeSSH(r.spec, host, hyper)
		cfg.Port, cfg.User, cfg.KeyPath, cfg.KnownHostsPath, cfg.OwnKnownHosts, cfg.Log = t.Port, t.User, key, kh, own, f.Log
		return node.DialSSH(ctx, cfg)
	}
	within := time.Duration(0)
	if t.Host == "" {
		// The lab's own bootstrap: a `stage run` typed right after `lab up`
		// finds it still booting; wait for it, saying so, rather than fail.
		within = bootWait
	}
	n, err := dialUntilUp(ctx, dial, within, time.Second, func() {
		f.Status.Update("%s does not answer SSH yet (still booting?): waiting up to %s", host, bootWait)
	})
	f.Status.End(err == nil)
	if err != nil {
		_ = hyper.Close()
		return nil, nil, err
	}
	// Every command of the run goes through one root shell: each SSH
	// session otherwise starts a sudo and a bash, 0.5 to 1.7 s on a TCG guest.
	sh := n.OneShell()
	return sh, func() { _ = sh.Close(); _ = n.Close(); _ = hyper.Close() }, nil
}

// via names the hypervisor host a node is reached through, if not this machine.
func via(h *lab.Hop) string {
	if !h.Remote() {
		return ""
	}
	return " via " + h.Name()
}

// bootstrapNodeMarks are what every bootstrap node has before bootkube runs:
// the installer's assets and the script itself.
var bootstrapNodeMarks = []string{"/opt/openshift", "/usr/local/bin/bootkube.sh"}

// looksLikeBootstrapNode refuses --local on a machine that is not a
// bootstrap node: the stages run as root and would change a workstation.
func looksLikeBootstrapNode(marks []string, force bool) error {
	if force {
		return nil
	}
	var missing []string
	for _, p := range marks {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("--local: this machine does not look like an OpenShift bootstrap node (no %s): the stages run as root and change the machine they run on. Run bootlab on the bootstrap node, reach it with --host or the lab's spec, or pass --force-local if this really is one", strings.Join(missing, ", ")))
}

// completeStages offers every stage by number, with its bootkube name.
func completeStages(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, s := range stages.Default() {
		out = append(out, s.ID()+"\t"+s.Slug)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func lookupAll(c stages.Catalog, args []string, all bool) ([]*stages.Stage, error) {
	if all && len(args) > 0 {
		return nil, cmdutil.UsageErrorf("name stages or give --all, not both")
	}
	if all || len(args) == 0 {
		if !all {
			return nil, cmdutil.UsageErrorf("name a stage (number, bootkube name or script name) or give --all; see `bootlab stage list`")
		}
		return c, nil
	}
	out, err := c.Select(stages.Selection{Only: args})
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	return out, nil
}

// hopOf opens the hop to the network of the lab of s (lab.Hop).
func hopOf(ctx context.Context, f *cmdutil.Factory, s *labspec.Spec) (*lab.Hop, error) {
	l, err := f.OpenLab(ctx, s)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Hop(ctx)
}
