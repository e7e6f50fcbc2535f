package classcmd

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

func testFactory() *cmdutil.Factory {
	return &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
}

func TestUpFlags(t *testing.T) {
	var got *UpOptions
	cmd := NewCmdUp(testFactory(), func(o *UpOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "ws.yaml", "--parallel", "3", "--no-preflight", "-o", "json"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "ws.yaml", got.Class.File)
	assert.Equal(t, 3, got.Parallel)
	assert.True(t, got.NoPreflight)
	assert.Equal(t, "json", got.Output)

	got = nil
	for _, args := range [][]string{{"--parallel", "0"}, {"-o", "yaml"}, {"extra"}} {
		cmd := NewCmdUp(testFactory(), func(o *UpOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		require.Error(t, err, "%v", args)
		var ec cmdutil.ExitCoder
		require.ErrorAs(t, err, &ec)
		assert.Equal(t, cmdutil.ExitUsage, ec.ExitCode(), "%v", args)
	}
	assert.Nil(t, got, "a refused command does not run")
}

func TestResetFlags(t *testing.T) {
	var got *ResetOptions
	run := func(args ...string) error {
		got = nil
		cmd := NewCmdReset(testFactory(), func(o *ResetOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		return cmd.Execute()
	}
	require.NoError(t, run("alice", "--to", "before-08", "--name", "ws"))
	assert.Equal(t, "alice", got.Learner)
	assert.Equal(t, "before-08", got.To)
	assert.Equal(t, "ws", got.Class.Name)
	require.NoError(t, run("bob"))
	assert.Empty(t, got.To, "without --to the lab is rebuilt")

	assert.ErrorContains(t, run(), "accepts 1 arg")
	assert.ErrorContains(t, run("alice", "--to", "Start_1"), `--to: checkpoint name "Start_1" is not a DNS label`)
	assert.Nil(t, got)
}

func TestStatusAndConfigOutputFlags(t *testing.T) {
	st := NewCmdStatus(testFactory(), func(*StatusOptions) error { return nil })
	st.SetArgs([]string{"-o", "yaml"})
	st.SetOut(&bytes.Buffer{})
	st.SetErr(&bytes.Buffer{})
	assert.ErrorContains(t, st.Execute(), `-o must be one of [table json], not "yaml"`)
	cfg := NewCmdConfig(testFactory(), func(*ConfigOptions) error { return nil })
	cfg.SetArgs([]string{"-o", "table"})
	cfg.SetOut(&bytes.Buffer{})
	cfg.SetErr(&bytes.Buffer{})
	assert.ErrorContains(t, cfg.Execute(), `-o must be one of [yaml json], not "table"`)
}

// Lines of labs built at once come out whole, each with its lab's prefix.
func TestPrefixWriterWritesWholeLines(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	a := &prefixWriter{w: &out, mu: &mu, prefix: "[ws-a] "}
	b := &prefixWriter{w: &out, mu: &mu, prefix: "[ws-b] "}
	_, _ = a.Write([]byte(" • Creating net"))
	_, _ = b.Write([]byte(" • Creating pool ...\n ✓ Creating"))
	_, _ = a.Write([]byte("work ...\n"))
	_, _ = b.Write([]byte(" pool\n"))
	assert.Equal(t, "[ws-b]  • Creating pool ...\n[ws-a]  • Creating network ...\n[ws-b]  ✓ Creating pool\n", out.String())
}

func TestClassNameNeedsAClass(t *testing.T) {
	t.Chdir(t.TempDir())
	cf := &ClassFlags{File: DefaultClassFile}
	_, err := cf.ClassName()
	assert.ErrorContains(t, err, "no class named: pass --name CLASS or -f CLASS.yaml")
	cf.Name = "ws"
	name, err := cf.ClassName()
	require.NoError(t, err)
	assert.Equal(t, "ws", name)
}

// class down asks as `lab down --all` does: at a terminal the answer
// decides, off one only --yes does (checked before confirmDown is called).
func TestClassDownConfirms(t *testing.T) {
	ms := []member{{Learner: "ann", Spec: &spec.Spec{Name: "ws-ann"}}, {Learner: "ben", Spec: &spec.Spec{Name: "ws-ben"}}}
	cases := []struct {
		name   string
		tty    bool
		answer string
		code   int
		want   string
	}{
		{"yes at a terminal", true, "y\n", cmdutil.ExitOK, ""},
		{"no at a terminal", true, "n\n", cmdutil.ExitError, "nothing deleted"},
		{"no answer at a terminal", true, "", cmdutil.ExitError, "nothing deleted"},
		{"no terminal", false, "y\n", cmdutil.ExitUsage, "class down would delete the 2 labs of class ws (ws-ann, ws-ben): pass --yes to confirm when not at a terminal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			f := &cmdutil.Factory{Streams: cmdutil.Streams{In: strings.NewReader(tc.answer), InTTY: tc.tty, Out: &bytes.Buffer{}, ErrOut: &errOut}}
			err := confirmDown(f, "ws", ms)
			assert.Equal(t, tc.code, cmdutil.ExitCodeOf(err))
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
			}
			if tc.tty {
				assert.Contains(t, errOut.String(), "Delete class ws and its 2 labs: ws-ann, ws-ben? [y/N]")
			}
		})
	}
}
