package units

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
)

// messages are unit's journal lines, oldest first.
func messages(t *testing.T, dir, unit string) []string {
	t.Helper()
	es, err := journal.Read(dir, journal.Query{Units: []string{unit}})
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Identifier+": "+e.Message)
	}
	return out
}

// blocking is a unit that runs until stopped, counting its starts.
func blocking(name string, starts *atomic.Int32) Unit {
	return Unit{Name: name, Description: "Approve CSRs during bootstrap phase", Run: func(ctx context.Context) error {
		starts.Add(1)
		<-ctx.Done()
		return nil
	}}
}

// stop ends the service and waits for it; start runs it again; both say
// so in the unit's journal as systemd[1], in systemd's words.
func TestStopStartWritesSystemdLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var starts atomic.Int32
	m := New(dir, blocking("approve-csr.service", &starts))
	ctx := context.Background()
	st, err := m.Status("approve-csr.service")
	require.NoError(t, err)
	assert.Equal(t, Inactive, st.Active, "nothing runs before Start")

	require.NoError(t, m.Start("approve-csr.service"))
	require.NoError(t, m.Start("approve-csr.service"), "starting an active unit changes nothing")
	require.NoError(t, m.Stop(ctx, "approve-csr.service"))
	st, err = m.Status("approve-csr.service")
	require.NoError(t, err)
	assert.Equal(t, Inactive, st.Active)
	require.NoError(t, m.Restart(ctx, "approve-csr.service"))
	st, _ = m.Status("approve-csr.service")
	assert.Equal(t, Active, st.Active)
	require.NoError(t, m.Stop(ctx, "approve-csr.service"))
	assert.Equal(t, int32(2), starts.Load())
	assert.Equal(t, []string{
		"systemd: Started approve-csr.service - Approve CSRs during bootstrap phase.",
		"systemd: Stopping approve-csr.service - Approve CSRs during bootstrap phase...",
		"systemd: approve-csr.service: Deactivated successfully.",
		"systemd: Stopped approve-csr.service - Approve CSRs during bootstrap phase.",
		"systemd: Started approve-csr.service - Approve CSRs during bootstrap phase.",
		"systemd: Stopping approve-csr.service - Approve CSRs during bootstrap phase...",
		"systemd: approve-csr.service: Deactivated successfully.",
		"systemd: Stopped approve-csr.service - Approve CSRs during bootstrap phase.",
	}, messages(t, dir, "approve-csr.service"))

	err = m.Start("bootkube.service")
	require.ErrorIs(t, err, ErrNoUnit)
	assert.Contains(t, err.Error(), "[approve-csr.service]")
}

// A service that exits by itself is inactive; one that fails is restarted
// after RestartDelay (Restart=on-failure), unless stopped meanwhile.
func TestExitAndRestartOnFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var runs atomic.Int32
	m := New(dir,
		Unit{Name: "done.service", Run: func(context.Context) error { return nil }},
		Unit{Name: "flaky.service", Run: func(ctx context.Context) error {
			if runs.Add(1) == 1 {
				return errors.New("no API yet")
			}
			<-ctx.Done()
			return nil
		}}).WithRestartDelay(10 * time.Millisecond)
	require.NoError(t, m.Start("done.service"))
	require.NoError(t, m.Start("flaky.service"))
	require.Eventually(t, func() bool {
		st, _ := m.Status("done.service")
		return st.Active == Inactive && st.Result == "success"
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return runs.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
	st, _ := m.Status("flaky.service")
	assert.Equal(t, Active, st.Active)
	assert.Contains(t, messages(t, dir, "flaky.service"), "systemd: flaky.service: Failed with result 'exit-code'.")
	assert.Contains(t, messages(t, dir, "flaky.service"), "systemd: flaky.service: Scheduled restart job.")
	require.NoError(t, m.Stop(context.Background(), "flaky.service"))
}

// Over the socket: status answers anyone, start and stop only root, and
// a unit the agent does not run is named as such with the ones it runs.
func TestSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var starts atomic.Int32
	m := New(dir, blocking("approve-csr.service", &starts))
	require.NoError(t, m.Start("approve-csr.service"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock := filepath.Join(dir, "run", "units.sock")
	go func() { _ = m.Serve(ctx, sock) }()
	var r Reply
	require.Eventually(t, func() bool {
		var err error
		r, err = Ask(ctx, sock, Request{Verb: "status", Unit: "approve-csr.service"})
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, Active, r.State.Active)
	assert.Equal(t, "Approve CSRs during bootstrap phase", r.State.Description)

	r, err := Ask(ctx, sock, Request{Verb: "status", Unit: "bootkube.service"})
	require.NoError(t, err)
	assert.True(t, r.NoUnit)
	assert.Equal(t, []string{"approve-csr.service"}, r.Units)

	assert.Equal(t, ErrNotRoot.Error(), m.answer(ctx, Request{Verb: "stop", Unit: "approve-csr.service"}, 1000).Error)
	assert.Contains(t, m.answer(ctx, Request{Verb: "reload", Unit: "approve-csr.service"}, 0).Error, `verb "reload" is not played`)
	r = m.answer(ctx, Request{Verb: "stop", Unit: "approve-csr.service"}, 0)
	assert.Empty(t, r.Error)
	assert.Equal(t, Inactive, r.State.Active)
}
