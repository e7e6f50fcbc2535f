package labcmd

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// lab verify of a lab on a remote hypervisor reads the console logs on
// that machine, through the Factory's connection (the same Lab.Verify as
// class verify's).
func TestVerifyReadsConsoleLogsOnTheHypervisor(t *testing.T) {
	home := isolatedHost(t)
	s, hv := fake.RemoteLab(home, "rv", "10.234.0.0/24")
	_, err := lab.Up(context.Background(), hv, s, lab.UpOptions{Accelerator: spec.AccelTCG, SkipLoadBalancer: true})
	require.NoError(t, err)
	master, _ := s.Node("master-0")

	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false),
		Log: slog.New(slog.DiscardHandler), Connect: hypervisor.Shared(hv)}
	cmd := NewCmdVerify(f, nil)
	cmd.SetArgs([]string{"--name", "rv", "--timeout", "0"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	require.Error(t, err, "an unbuilt network fails its checks")
	assert.Contains(t, hv.Machine.Reads, labdir.ConsoleLog(s, master), "master-0's console log was read on the hypervisor's machine")
	assert.Contains(t, out.String(), "master-0", "the checks are printed")
}
