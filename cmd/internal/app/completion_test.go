package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/spec"
)

// completionLab builds probe lab name (of class, when set) on hv under
// the bootlab home, as lab up would, with checkpoint cp when set.
func completionLab(t *testing.T, hv *fake.Hypervisor, name, class, cidr, cp string) {
	t.Helper()
	buildLab(t, hv, &spec.Spec{Name: name, Network: spec.Network{CIDR: cidr}}, class, cp)
}

// buildLab builds s (one master, on the test driver) on hv as lab up
// would, with checkpoint cp when set.
func buildLab(t *testing.T, hv *fake.Hypervisor, s *spec.Spec, class, cp string) {
	t.Helper()
	ctx := context.Background()
	s.Libvirt.URI, s.Topology = "test:///default", spec.Topology{Masters: 1}
	s.Storage.PoolDir = filepath.Join(t.TempDir(), "pool")
	s.Defaults()
	_, err := lab.Up(ctx, hv, s, lab.UpOptions{Accelerator: spec.AccelTCG, Class: class})
	require.NoError(t, err)
	if cp == "" {
		return
	}
	l, err := lab.Open(ctx, s, lab.Options{Connect: hypervisor.Shared(hv)})
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Checkpoint(ctx, cp, lab.SaveOptions{})
	require.NoError(t, err)
}

// Completion offers what is on this host (issue 52, item 8): the labs for
// a lab command's --name, the classes for a class command's, a lab's
// checkpoints for lab checkpoint restore and delete, and a class's
// learners (and their checkpoints, for --to) for class reset.
func TestCompletionOffersLabsCheckpointsAndLearners(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	hv := fake.New()
	hv.Caps = hypervisor.Capabilities{} // the test driver: no load balancer
	completionLab(t, hv, "c52", "", "10.152.0.0/24", "before-lesson")
	completionLab(t, hv, "ws-alice", "ws", "10.152.1.0/24", "start")
	completionLab(t, hv, "ws-bob", "ws", "10.152.2.0/24", "")

	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{args: []string{"lab", "status", "--name", ""}, want: []string{"c52\tprobe lab\n", "ws-alice\tprobe lab, class ws\n", "ws-bob\tprobe lab, class ws\n"}},
		{args: []string{"stage", "reset", "--name", ""}, want: []string{"c52\tprobe lab\n"}},
		{args: []string{"lab", "init", "--name", ""}, not: []string{"c52"}}, // a new lab's name
		{args: []string{"class", "status", "--name", ""}, want: []string{"ws\t2 labs\n"}, not: []string{"c52"}},
		{args: []string{"lab", "checkpoint", "restore", "--name", "c52", ""}, want: []string{"before-lesson\t"}},
		{args: []string{"lab", "checkpoint", "delete", "--name", "ws-alice", ""}, want: []string{"start\t"}, not: []string{"before-lesson"}},
		{args: []string{"class", "reset", "--name", "ws", ""}, want: []string{"alice\tlab ws-alice\n", "bob\tlab ws-bob\n"}},
		{args: []string{"class", "reset", "alice", "--name", "ws", "--to", ""}, want: []string{"start\t"}, not: []string{"before-lesson"}},
	} {
		code, out, errOut := runOn(t, hv, append([]string{"__complete"}, c.args...)...)
		require.Equal(t, 0, code, "%v: %s", c.args, errOut)
		for _, w := range c.want {
			assert.Contains(t, out, w, "%v", c.args)
		}
		for _, n := range c.not {
			assert.NotContains(t, out, n, "%v", c.args)
		}
		if len(c.want) > 0 {
			assert.True(t, strings.HasSuffix(out, ":4\n"), "%v: no file names offered: %q", c.args, out)
		}
	}
}
