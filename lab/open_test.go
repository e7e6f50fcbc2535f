package lab

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// Open resolves the lab itself: once an up was recorded, the handle acts
// on that up's effective spec whatever the spec given says now, and knows
// the lab's identity, accelerator and files.
func TestOpenActsOnTheLabAsBuilt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	given := testSpec(t, "b")
	l, err := Open(ctx, given, Options{})
	require.NoError(t, err)
	assert.False(t, l.Built(), "nothing recorded yet")
	assert.Same(t, given, l.Spec())
	assert.Empty(t, l.UUID())
	assert.Empty(t, l.Accelerator())
	assert.Empty(t, l.Restored())

	built := *given
	built.Topology.Workers = 3
	st := &labdir.State{Name: "b", UUID: "u-b", Spec: &built, Accelerator: spec.AccelTCG,
		Restored: &labdir.RestoreRecord{Checkpoint: "before-07"}}
	require.NoError(t, st.Save(given.LabDir))
	l, err = Open(ctx, given, Options{})
	require.NoError(t, err)
	assert.True(t, l.Built())
	assert.Equal(t, 3, l.Spec().Topology.Workers, "the spec as built, not as given")
	assert.Equal(t, "u-b", l.UUID())
	assert.Equal(t, spec.AccelTCG, l.Accelerator())
	assert.Equal(t, "before-07", l.Restored())
	assert.Equal(t, filepath.Join(given.LabDir, "ssh", "id_ed25519"), l.SSHKey())
	assert.Equal(t, filepath.Join(given.LabDir, "ssh", "known_hosts"), l.KnownHosts())
	assert.Equal(t, filepath.Join(given.LabDir, "stages"), l.StageDir())
}

// A lab directory holding another lab is refused when the lab is opened,
// with the error every command maps to "invalid input".
func TestOpenRefusesAnotherLabsDirectory(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "mine")
	require.NoError(t, (&labdir.State{Name: "theirs", UUID: "u"}).Save(s.LabDir))
	_, err := Open(context.Background(), s, Options{})
	var idErr *labdir.IdentityError
	require.ErrorAs(t, err, &idErr)
	assert.True(t, InvalidInput(err))
	assert.Contains(t, err.Error(), `belongs to lab "theirs", but the spec names lab "mine": nothing was done`)
}

// LastVerify is this lab's record only: one another lab of the same name
// left (another UUID) is none.
func TestLastVerifyIsThisLabsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testSpec(t, "v")
	require.NoError(t, (&labdir.State{Name: "v", UUID: "u-now", Spec: s}).Save(s.LabDir))
	l, err := Open(ctx, s, Options{})
	require.NoError(t, err)
	rec, err := l.LastVerify()
	require.NoError(t, err)
	assert.Nil(t, rec)
	assert.Equal(t, "never verified", rec.Summary(), "a nil record says so")

	require.NoError(t, labdir.SaveVerifyRecord(s.LabDir, &labdir.VerifyRecord{Time: time.Now(), OK: true, Total: 4, Passed: 4, LabUUID: "u-earlier"}))
	rec, err = l.LastVerify()
	require.NoError(t, err)
	assert.Nil(t, rec, "another lab's record")

	require.NoError(t, labdir.SaveVerifyRecord(s.LabDir, &labdir.VerifyRecord{Time: time.Now(), Total: 4, Passed: 3, LabUUID: "u-now"}))
	rec, err = l.LastVerify()
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "1 of 4 failed", rec.Summary())
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"total":4,"passed":3`, "printed as the record's own fields")
}

// FindLabs names each lab directory under a home: a built lab by its
// recorded spec, one cut short by its name and directory, one whose state
// cannot be read by why.
func TestFindLabs(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := func(name string) string { return filepath.Join(home, "labs", name) }
	built := &spec.Spec{Name: "a", LabDir: dir("a")}
	built.Defaults()
	require.NoError(t, (&labdir.State{Name: "a", UUID: "u-a", Class: "ux", Spec: built}).Save(dir("a")))
	require.NoError(t, (&labdir.State{Name: "b", UUID: "u-b"}).Save(dir("b")))
	require.NoError(t, os.MkdirAll(dir("c"), 0o755))
	require.NoError(t, os.WriteFile(labdir.StatePath(dir("c")), []byte("{"), 0o600))
	require.NoError(t, os.MkdirAll(dir("d"), 0o755), "no state: not a lab yet")

	labs, err := FindLabs(home)
	require.NoError(t, err)
	require.Len(t, labs, 3)
	a, b, c := labs[0], labs[1], labs[2]
	assert.Equal(t, "a", a.Name)
	assert.True(t, a.Built)
	assert.Equal(t, "ux", a.Class)
	assert.Equal(t, built, a.Spec, "the recorded spec")
	assert.Equal(t, 3, a.Spec.Topology.Masters)

	assert.Equal(t, "b", b.Name)
	assert.False(t, b.Built)
	require.NotNil(t, b.Spec)
	assert.Equal(t, dir("b"), b.Spec.LabDir, "named by its directory")
	assert.Equal(t, "b", b.Spec.Name)
	assert.NotEmpty(t, b.Spec.Libvirt.URI, "with every default")

	assert.Equal(t, "c", c.Name)
	assert.Nil(t, c.Spec)
	assert.ErrorContains(t, c.Err, "parse lab state")
}

// `lab wait` follows a real OpenShift install only: the handle refuses a
// probe lab as bad input before it reaches for the lab's network or its
// hypervisor.
func TestWaitRefusesAProbeLab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testSpec(t, "pw")
	s.Profile = spec.ProfileProbe
	require.NoError(t, (&labdir.State{Name: "pw", UUID: "u", Spec: s}).Save(s.LabDir))
	connects := 0
	l, err := Open(ctx, s, Options{Connect: func(context.Context, string, *slog.Logger) (hypervisor.Hypervisor, error) {
		connects++
		return nil, errors.New("no hypervisor here")
	}})
	require.NoError(t, err)
	for name, wait := range map[string]func(context.Context, WaitOptions) error{"bootstrap": l.WaitBootstrap, "install": l.WaitInstall} {
		err := wait(ctx, WaitOptions{})
		require.Error(t, err, name)
		assert.True(t, InvalidInput(err), name)
		assert.Contains(t, err.Error(), "lab pw is a probe lab: `lab wait` follows a real OpenShift install", name)
	}
	assert.Zero(t, connects)
}
