package labcmd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
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

	cmd = NewCmdSSH(testFactory(), func(o *SSHOptions) error { return nil })
	cmd.SetArgs([]string{"master-0", "uname"})
	assert.ErrorContains(t, cmd.Execute(), "after --")

	s := &lab.Spec{Name: "a", LabDir: "/l"}
	args := SSHArgs(s, lab.Node{Name: "m", IP: "10.0.0.11"}, []string{"id"})
	joined := strings.Join(args, " ")
	assert.Contains(t, joined, "-i /l/ssh/id_ed25519")
	assert.Contains(t, joined, "UserKnownHostsFile=/l/ssh/known_hosts")
	assert.Equal(t, []string{"core@10.0.0.11", "--", "id"}, args[len(args)-3:])
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

func TestFollowFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.log")
	require.NoError(t, os.WriteFile(p, []byte("boot\n"), 0o644))
	var out bytes.Buffer
	require.NoError(t, followFile(context.Background(), p, &out, false, time.Millisecond))
	assert.Equal(t, "boot\n", out.String())

	// Follow: lines appended later arrive; cancelling ends the follow.
	ctx, cancel := context.WithCancel(context.Background())
	pr := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- followFile(ctx, p, pr, true, time.Millisecond) }()
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString("login:\n")
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	for !strings.Contains(pr.String(), "login:") {
		time.Sleep(time.Millisecond)
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, "boot\nlogin:\n", pr.String())
}

func TestPrintStatus(t *testing.T) {
	var out bytes.Buffer
	st := &lab.LabStatus{Name: "a", URI: "test:///default",
		Network: lab.NetworkStatus{Name: "bootlab-a", Exists: true, Active: true, Bridge: "bl1", Gateway: "10.0.0.1"},
		DNS:     []lab.DNSRecord{{Name: "api.ocp.lab.local", IP: "10.0.0.1"}},
		Nodes:   []lab.NodeStatus{{Name: "master-0", Role: lab.RoleMaster, Domain: "bootlab-a-master-0", State: "running", ReservedIP: "10.0.0.11", MAC: "52:54:00:00:00:01"}}}
	require.NoError(t, printStatus(&out, st))
	s := out.String()
	assert.Contains(t, s, "bootlab-a")
	assert.Contains(t, s, "active")
	assert.Contains(t, s, "api.ocp.lab.local")
	assert.Contains(t, s, "10.0.0.11 (no lease)")
}

func TestSSHRunsClientWithLabKey(t *testing.T) {
	dir := t.TempDir()
	s := &lab.Spec{Name: "sshlab", Profile: lab.ProfileOpenShift, LabDir: filepath.Join(dir, "lab"), Libvirt: lab.Libvirt{URI: "test:///default"}}
	s.Defaults()
	require.NoError(t, lab.EnsureSSHKey(s))
	require.NoError(t, (&lab.State{Spec: s}).Save(s.LabDir))
	// A stand-in ssh client that prints its arguments and exits 3.
	fake := filepath.Join(dir, "fake-ssh")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\"\nexit 3\n"), 0o755))

	f := testFactory()
	f.Log = slog.New(slog.DiscardHandler)
	out := f.Streams.Out.(*bytes.Buffer)
	cmd := NewCmdSSH(f, nil)
	cmd.SetArgs([]string{"--lab-dir", s.LabDir, "--name", "sshlab", "--ssh", fake, "master-1", "--", "hostname"})
	err := cmd.Execute()
	var ce cmdutil.ExitCoder
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3, ce.ExitCode(), "ssh's exit code is passed on")
	m1, _ := s.Node("master-1")
	assert.Contains(t, out.String(), "-i "+s.SSHKeyPath())
	assert.Contains(t, out.String(), "core@"+m1.IP+" -- hostname")
}

// Probe nodes run no sshd: lab ssh says so and points at console and verify
// instead of letting ssh fail with "Connection refused".
func TestSSHRefusesProbeLab(t *testing.T) {
	dir := t.TempDir()
	s := &lab.Spec{Name: "sshprobe", LabDir: filepath.Join(dir, "lab"), Libvirt: lab.Libvirt{URI: "test:///default"}}
	s.Defaults()
	require.Equal(t, lab.ProfileProbe, s.Profile)
	require.NoError(t, (&lab.State{Spec: s}).Save(s.LabDir))
	fake := filepath.Join(dir, "fake-ssh")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho ran\n"), 0o755))

	f := testFactory()
	f.Log = slog.New(slog.DiscardHandler)
	cmd := NewCmdSSH(f, nil)
	cmd.SetArgs([]string{"--lab-dir", s.LabDir, "--name", "sshprobe", "--ssh", fake, "master-0"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lab sshprobe is a probe lab")
	assert.Contains(t, err.Error(), "`bootlab lab console master-0`")
	assert.NotContains(t, f.Streams.Out.(*bytes.Buffer).String(), "ran", "ssh must not run")
}

// A rehearsal lab's bootstrap runs sshd: lab ssh runs the client for it,
// and still refuses the lab's other (probe) nodes.
func TestSSHRehearsalBootstrap(t *testing.T) {
	dir := t.TempDir()
	s := &lab.Spec{Name: "sshreh", LabDir: filepath.Join(dir, "lab"), Libvirt: lab.Libvirt{URI: "test:///default"},
		OpenShift: lab.OpenShift{ManualBootstrap: true}}
	s.Defaults()
	require.True(t, s.Rehearsal())
	require.NoError(t, lab.EnsureSSHKey(s))
	require.NoError(t, (&lab.State{Spec: s}).Save(s.LabDir))
	fake := filepath.Join(dir, "fake-ssh")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755))

	f := testFactory()
	f.Log = slog.New(slog.DiscardHandler)
	cmd := NewCmdSSH(f, nil)
	cmd.SetArgs([]string{"--lab-dir", s.LabDir, "--name", "sshreh", "--ssh", fake, "bootstrap", "--", "true"})
	require.NoError(t, cmd.Execute())
	bs, _ := s.Node("bootstrap")
	assert.Contains(t, f.Streams.Out.(*bytes.Buffer).String(), "core@"+bs.IP+" -- true")

	f = testFactory()
	f.Log = slog.New(slog.DiscardHandler)
	cmd = NewCmdSSH(f, nil)
	cmd.SetArgs([]string{"--lab-dir", s.LabDir, "--name", "sshreh", "--ssh", fake, "master-0"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only its bootstrap node runs an SSH server")
	assert.Empty(t, f.Streams.Out.(*bytes.Buffer).String(), "ssh must not run")
}

func TestUpNextStepsFitTheProfile(t *testing.T) {
	rehearsal := &lab.Spec{Profile: lab.ProfileProbe, OpenShift: lab.OpenShift{ManualBootstrap: true}}
	assert.Contains(t, nextSteps(rehearsal), "`bootlab stage run 01`")
	probe := &lab.Spec{Profile: lab.ProfileProbe}
	assert.NotContains(t, nextSteps(probe), "lab ssh", "probe nodes run no sshd")
	assert.Contains(t, nextSteps(probe), "`bootlab lab verify`")
	assert.Contains(t, nextSteps(&lab.Spec{Profile: lab.ProfileOpenShift}), "`bootlab lab ssh NODE`")
}

func TestDownSummary(t *testing.T) {
	s := &lab.Spec{Name: "typo", LabDir: "/var/lib/bootlab/labs/typo", Libvirt: lab.Libvirt{URI: "qemu:///system"}}
	got := downSummary(s, []lab.StepResult{{Name: "Deleting nodes"}, {Name: "Deleting network bootlab-typo"}})
	assert.Equal(t, "nothing to delete: lab typo has no VMs, load balancer, pool, network or files here (qemu:///system, /var/lib/bootlab/labs/typo)", got)
	// What each step removed is on that step's own line (status EndDetail).
	got = downSummary(s, []lab.StepResult{{Name: "Deleting nodes", Changed: true, Detail: "3 deleted"}, {Name: "Deleting network bootlab-typo"}})
	assert.Equal(t, "lab typo deleted", got)
}

func TestStatusSaysWhenTheLabIsNotUp(t *testing.T) {
	absent := &lab.LabStatus{Name: "typo", URI: "qemu:///system", Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "absent"}}}
	assert.Contains(t, notUpHint(absent), "lab typo is not up on qemu:///system: `bootlab lab up`")
	halfUp := &lab.LabStatus{Name: "half", Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "absent"}}}
	halfUp.Network.Exists = true
	assert.Empty(t, notUpHint(halfUp), "a network alone is a lab that exists")
	oneVM := &lab.LabStatus{Name: "vm", Nodes: []lab.NodeStatus{{Name: "bootstrap", State: "shut off"}}}
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
