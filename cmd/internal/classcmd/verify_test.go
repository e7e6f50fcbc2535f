package classcmd

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// class verify is lab verify of each lab (Lab.Verify): on a remote
// hypervisor the console logs are read on that machine, through the
// Factory's connection, not from the workstation's disk. The class's own
// verify once skipped Options.Host and read them here.
func TestClassVerifyReadsConsoleLogsOnTheHypervisor(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(cmdutil.EnvLab, "")
	s, hv := fake.RemoteLab(home, "ws-ann", "10.233.0.0/24")
	// Built as class up builds it, on the fake: its VMs run there.
	_, err := lab.Up(context.Background(), hv, s, lab.UpOptions{Accelerator: spec.AccelTCG, Class: "ws", SkipLoadBalancer: true})
	require.NoError(t, err)
	master, _ := s.Node("master-0")
	hv.Machine.Files[labdir.ConsoleLog(s, master)] = []byte("booting\n")

	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false),
		Log: slog.New(slog.DiscardHandler), Connect: hypervisor.Shared(hv)}
	cmd := NewCmdVerify(f, nil)
	cmd.SetArgs([]string{"--name", "ws", "--timeout", "0"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	require.Error(t, err, "an unbuilt network fails its checks")
	assert.Contains(t, errOut.String(), "ws-ann", "one line for the lab")
	assert.Contains(t, hv.Machine.Reads, labdir.ConsoleLog(s, master), "master-0's console log was read on the hypervisor's machine")
}
