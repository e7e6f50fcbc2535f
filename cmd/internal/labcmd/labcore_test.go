package labcmd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
)

// testFactory is a Factory whose streams are buffers (no terminal).
func testFactory() *cmdutil.Factory {
	return &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
}

func TestUpFlags(t *testing.T) {
	var got *UpOptions
	cmd := NewCmdUp(testFactory(), func(o *UpOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--start-workers", "--no-preflight", "--workers", "2", "--uri", "test:///default"})
	require.NoError(t, cmd.Execute())
	assert.True(t, got.StartWorkers)
	assert.True(t, got.NoPreflight)
	assert.Equal(t, 2, got.Spec.Workers)
	assert.Equal(t, "test:///default", got.Spec.URI)
}

func TestDownFlags(t *testing.T) {
	var got *DownOptions
	cmd := NewCmdDown(testFactory(), func(o *DownOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--keep-images", "--name", "x"})
	require.NoError(t, cmd.Execute())
	assert.True(t, got.KeepImages)
	assert.Equal(t, "x", got.Spec.Name)
}

func TestStatusRejectsUnknownOutput(t *testing.T) {
	cmd := NewCmdStatus(testFactory(), func(o *StatusOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	assert.ErrorContains(t, cmd.Execute(), "-o must be one of [table json]")
}

func TestSSHArgsAndCommand(t *testing.T) {
	var got *SSHOptions
	cmd := NewCmdSSH(testFactory(), func(o *SSHOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"master-0", "--", "uname", "-a"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "master-0", got.Node)
	assert.Equal(t, []string{"uname", "-a"}, got.Command)
	assert.Equal(t, 22, got.Port)

	cmd = NewCmdSSH(testFactory(), func(o *SSHOptions) error { return nil })
	cmd.SetArgs([]string{"master-0", "uname"})
	assert.ErrorContains(t, cmd.Execute(), "after --")
}

func TestConsoleNeedsNode(t *testing.T) {
	cmd := NewCmdConsole(testFactory(), func(o *ConsoleOptions) error { return nil })
	cmd.SetArgs([]string{})
	err := cmd.Execute()
	require.Error(t, err)
	var ce cmdutil.ExitCoder
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cmdutil.ExitUsage, ce.ExitCode())
}

func TestPrintStatus(t *testing.T) {
	var out bytes.Buffer
	st := &lab.Status{Name: "a", URI: "test:///default",
		Network: lab.NetworkStatus{Name: "bootlab-a", Exists: true, Active: true, Bridge: "bl1", Gateway: "10.0.0.1"},
		DNS:     []lab.DNSRecord{{Name: "api.ocp.lab.local", IP: "10.0.0.1"}},
		Nodes:   []lab.NodeStatus{{Name: "master-0", Role: spec.RoleMaster, Domain: "bootlab-a-master-0", State: "running", ReservedIP: "10.0.0.11", MAC: "52:54:00:00:00:01"}}}
	require.NoError(t, printStatus(&out, st))
	s := out.String()
	assert.Contains(t, s, "bootlab-a")
	assert.Contains(t, s, "active")
	assert.Contains(t, s, "api.ocp.lab.local")
	assert.Contains(t, s, "10.0.0.11 (no lease)")
}

// sshLab saves the state of a lab whose node runs an SSH server at srv
// (its address made 127.0.0.1), with srv's client key as the lab key.
func sshLab(t *testing.T, s *spec.Spec, node string, srv *sshctest.Server) {
	t.Helper()
	s.Network.CIDR = "127.0.0.0/24"
	s.Defaults()
	for i := range s.Nodes {
		if s.Nodes[i].Name == node {
			s.Nodes[i].IP = srv.Host
		}
	}
	key, err := os.ReadFile(srv.KeyFile)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(labdir.SSHKey(s)), 0o700))
	require.NoError(t, os.WriteFile(labdir.SSHKey(s), key, 0o600))
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))
}

// runSSHCmd runs `lab ssh ARGS...` against nodes listening on port.
func runSSHCmd(t *testing.T, port int, args ...string) (*cmdutil.Factory, error) {
	t.Helper()
	f := testFactory()
	f.Log = slog.New(slog.DiscardHandler)
	cmd := NewCmdSSH(f, func(o *SSHOptions) error {
		o.Port = port
		return runSSH(context.Background(), f, o)
	})
	cmd.SetArgs(args)
	return f, cmd.Execute()
}

// lab ssh logs in as core with the lab key through bootlab's SSH client,
// records the node's host key in the lab's known_hosts (trust on first
// use), runs the words after -- as one command line and exits with its code.
func TestSSHRunsCommandWithLabKey(t *testing.T) {
	srv := sshctest.Start(t)
	s := &spec.Spec{Name: "sshlab", Profile: spec.ProfileOpenShift, LabDir: filepath.Join(t.TempDir(), "lab"), Libvirt: spec.Libvirt{URI: "test:///default"}}
	sshLab(t, s, "master-1", srv)

	f, err := runSSHCmd(t, srv.Port, "--lab-dir", s.LabDir, "--name", "sshlab", "master-1", "--", "echo", "hi;", "exit", "3")
	var ce cmdutil.ExitCoder
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3, ce.ExitCode(), "the command's exit code is passed on")
	assert.Equal(t, "hi\n", f.Streams.Out.(*bytes.Buffer).String())
	cmds := srv.Commands()
	require.Len(t, cmds, 1)
	assert.Equal(t, "bash -c 'echo hi; exit 3'", cmds[0], "as core, no sudo")

	kh, err := os.ReadFile(labdir.KnownHosts(s))
	require.NoError(t, err)
	assert.Contains(t, string(kh), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(srv.HostKey))))

	_, err = runSSHCmd(t, srv.Port, "--lab-dir", s.LabDir, "--name", "sshlab", "master-1", "--", "true")
	require.NoError(t, err)
}

// Probe nodes run no sshd: lab ssh says so and points at console and verify
// instead of letting ssh fail with "Connection refused".
func TestSSHRefusesProbeLab(t *testing.T) {
	srv := sshctest.Start(t)
	s := &spec.Spec{Name: "sshprobe", LabDir: filepath.Join(t.TempDir(), "lab"), Libvirt: spec.Libvirt{URI: "test:///default"}}
	sshLab(t, s, "master-0", srv)
	require.Equal(t, spec.ProfileProbe, s.Profile)

	_, err := runSSHCmd(t, srv.Port, "--lab-dir", s.LabDir, "--name", "sshprobe", "master-0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lab sshprobe is a probe lab")
	assert.Contains(t, err.Error(), "`bootlab lab console master-0`")
	assert.Zero(t, srv.Conns(), "no SSH connection")
}

// A rehearsal lab's bootstrap runs sshd: lab ssh reaches it, and still
// refuses the lab's other (probe) nodes.
func TestSSHRehearsalBootstrap(t *testing.T) {
	srv := sshctest.Start(t)
	s := &spec.Spec{Name: "sshreh", LabDir: filepath.Join(t.TempDir(), "lab"), Libvirt: spec.Libvirt{URI: "test:///default"},
		OpenShift: spec.OpenShift{ManualBootstrap: true}}
	sshLab(t, s, "bootstrap", srv)
	require.True(t, s.Rehearsal())

	f, err := runSSHCmd(t, srv.Port, "--lab-dir", s.LabDir, "--name", "sshreh", "bootstrap", "--", "echo", "in")
	require.NoError(t, err)
	assert.Equal(t, "in\n", f.Streams.Out.(*bytes.Buffer).String())

	conns := srv.Conns()
	_, err = runSSHCmd(t, srv.Port, "--lab-dir", s.LabDir, "--name", "sshreh", "master-0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only its bootstrap node runs an SSH server")
	assert.Equal(t, conns, srv.Conns(), "no SSH connection")
}

func TestUpNextStepsFitTheProfile(t *testing.T) {
	rehearsal := &spec.Spec{Profile: spec.ProfileProbe, OpenShift: spec.OpenShift{ManualBootstrap: true}}
	assert.Contains(t, nextSteps(rehearsal), "`bootlab stage run 01`")
	probe := &spec.Spec{Profile: spec.ProfileProbe}
	assert.NotContains(t, nextSteps(probe), "lab ssh", "probe nodes run no sshd")
	assert.Contains(t, nextSteps(probe), "`bootlab lab verify`")
	assert.Contains(t, nextSteps(&spec.Spec{Profile: spec.ProfileOpenShift}), "`bootlab lab ssh NODE`")
}

func TestDownSummary(t *testing.T) {
	s := &spec.Spec{Name: "typo", LabDir: "/var/lib/bootlab/labs/typo", Libvirt: spec.Libvirt{URI: "qemu:///system"}}
	got := downSummary(s, []lab.StepResult{{Name: "Deleting nodes"}, {Name: "Deleting network bootlab-typo"}})
	assert.Equal(t, "nothing to delete: lab typo has no VMs, load balancer, pool, network or files here (qemu:///system, /var/lib/bootlab/labs/typo; a directory without this lab's state is never touched)", got)
	// What each step removed is on that step's own line (status EndDetail).
	got = downSummary(s, []lab.StepResult{{Name: "Deleting nodes", Changed: true, Detail: "3 deleted"}, {Name: "Deleting network bootlab-typo"}})
	assert.Equal(t, "lab typo deleted", got)
}

func TestStatusSaysWhenTheLabIsNotUp(t *testing.T) {
	absent := &lab.Status{Name: "typo", URI: "qemu:///system", Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "absent"}}}
	assert.Contains(t, notUpHint(absent), "lab typo is not up on qemu:///system: `bootlab lab up`")
	halfUp := &lab.Status{Name: "half", Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "absent"}}}
	halfUp.Network.Exists = true
	assert.Empty(t, notUpHint(halfUp), "a network alone is a lab that exists")
	oneVM := &lab.Status{Name: "vm", Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "shut off"}}}
	assert.Empty(t, notUpHint(oneVM))
}

// isolatedHost gives a test its own BOOTLAB_HOME and working directory (no
// ./bootlab.yaml), so the labs this machine really has play no part.
func isolatedHost(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	return home
}

// A lab on a remote hypervisor: lab ssh reaches the node through the
// hypervisor host's SSH connection (like ssh -J), never directly.
func TestSSHThroughRemoteHypervisor(t *testing.T) {
	hyper := sshctest.Start(t)
	node := sshctest.Start(t)
	dir := t.TempDir()
	hyperKH := filepath.Join(dir, "hyper_known_hosts")
	uri := hyper.LibvirtURI(t, hyperKH)
	s := &spec.Spec{Name: "sshremote", LabDir: filepath.Join(dir, "lab"), Libvirt: spec.Libvirt{URI: uri},
		OpenShift: spec.OpenShift{ManualBootstrap: true}}
	sshLab(t, s, "bootstrap", node)

	f, err := runSSHCmd(t, node.Port, "--lab-dir", s.LabDir, "--name", "sshremote", "bootstrap", "--", "echo", "behind")
	require.NoError(t, err)
	assert.Equal(t, "behind\n", f.Streams.Out.(*bytes.Buffer).String())
	assert.Equal(t, []string{"tcp " + node.Addr}, hyper.Dials(), "the node was dialled from the hypervisor host")
	assert.Empty(t, hyper.Commands(), "nothing ran on the hypervisor")
	assert.Equal(t, []string{"bash -c 'echo behind'"}, node.Commands())
	// One host-key policy, two files: the hypervisor's where the URI says,
	// the node's in the lab.
	for _, kh := range []string{hyperKH, labdir.KnownHosts(s)} {
		data, err := os.ReadFile(kh)
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(data), "\n"), kh)
	}
}
