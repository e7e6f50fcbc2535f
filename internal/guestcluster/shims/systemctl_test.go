package shims

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/units"
)

// systemctl stop, is-active, status and start of a unit the agent runs
// ask the agent over its socket; status shows the unit's journal lines;
// a unit it does not run is refused, naming those it does.
func TestSystemctlAsksTheAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := units.New(dir, units.Unit{Name: "approve-csr.service", Description: "Approve CSRs during bootstrap phase",
		Run: func(ctx context.Context) error { <-ctx.Done(); return nil }})
	require.NoError(t, m.Start("approve-csr.service"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock := filepath.Join(dir, "units.sock")
	go func() { _ = m.Serve(ctx, sock) }()
	tools := &Tools{JournalDir: dir, UnitsSocket: sock}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := tools.systemctlMain(args, &out, &errb, nil)
		return code, out.String(), errb.String()
	}
	require.Eventually(t, func() bool { c, _, _ := run("is-active", "approve-csr"); return c == 0 }, 10*time.Second, 10*time.Millisecond)
	code, out, _ := run("is-active", "approve-csr.service")
	assert.Equal(t, 0, code)
	assert.Equal(t, "active\n", out)

	code, _, errs := run("stop", "approve-csr.service")
	if os.Geteuid() != 0 {
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "must be root: sudo systemctl stop approve-csr.service")
		return
	}
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "bootlab rehearsal stand-in")
	code, out, _ = run("is-active", "approve-csr.service")
	assert.Equal(t, 3, code)
	assert.Equal(t, "inactive\n", out)
	code, _, _ = run("-q", "is-active", "approve-csr.service")
	assert.Equal(t, 3, code)
	code, out, _ = run("status", "--no-pager", "approve-csr.service")
	assert.Equal(t, 3, code)
	assert.Contains(t, out, "○ approve-csr.service - Approve CSRs during bootstrap phase")
	assert.Contains(t, out, "Active: inactive (dead) since ")
	assert.Contains(t, out, "bootlab rehearsal stand-in")
	assert.Contains(t, out, "systemd[1]: Stopped approve-csr.service - Approve CSRs during bootstrap phase.")
	code, _, errs = run("start", "approve-csr.service")
	require.Equal(t, 0, code, errs)
	code, _, _ = run("is-active", "approve-csr.service")
	assert.Equal(t, 0, code)

	code, _, errs = run("is-active", "bootkube.service")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "the units the agent runs (approve-csr.service)")
	tools.UnitsSocket = filepath.Join(dir, "none.sock")
	code, _, errs = run("status", "approve-csr.service")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "the agent's socket "+units.SocketPath+" is missing")
}
