package lab

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/diagnose"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// testSpec is a small lab of its own in a temporary directory: the handle's
// tests need a valid spec, never its VMs.
func testSpec(t *testing.T, name string) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	s := &spec.Spec{Name: name, LabDir: filepath.Join(dir, "lab"), Topology: spec.Topology{Masters: 2, Workers: 1},
		Network: spec.Network{CIDR: "10.88.0.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}}
	s.Defaults()
	return s
}

// The handle connects on the first verb that needs the hypervisor, once for
// all its verbs, and Close closes that connection.
func TestOpenConnectsOnceAndCloses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "h")
	connects := 0
	connect := func(context.Context, string, *slog.Logger) (hypervisor.Hypervisor, error) {
		connects++
		return hv, nil
	}
	l, err := Open(ctx, s, Options{Connect: connect})
	require.NoError(t, err)
	assert.Equal(t, 0, connects, "Open connects to nothing")

	_, err = hv.DefineNetwork(ctx, "<network><name>other</name></network>")
	require.NoError(t, err)
	_, err = l.Status(ctx)
	require.NoError(t, err)
	_, err = l.Checkpoints(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, connects, "one connection for every verb")
	require.NoError(t, l.Close())
	assert.Equal(t, 1, hv.Closed)
	require.NoError(t, l.Close(), "closing twice is harmless")
	assert.Equal(t, 1, hv.Closed)
}

// A connection that fails is the error of every verb that needs one.
func TestOpenConnectErrorIsEveryVerbs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testSpec(t, "h")
	l, err := Open(ctx, s, Options{Connect: func(context.Context, string, *slog.Logger) (hypervisor.Hypervisor, error) {
		return nil, errors.New("dial unix /var/run/libvirt/libvirt-sock: connect: no such file or directory")
	}})
	require.NoError(t, err)
	_, err = l.Status(ctx)
	assert.ErrorContains(t, err, "libvirt-sock")
	_, err = l.Checkpoints(ctx)
	assert.ErrorContains(t, err, "libvirt-sock")
	assert.NoError(t, l.Close())
}

// Verify needs a built lab and says so in a typed error.
func TestVerifyOfAnUnbuiltLab(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "nb")
	l, err := Open(context.Background(), s, Options{Connect: hypervisor.Shared(fake.New())})
	require.NoError(t, err)
	_, err = l.Verify(context.Background(), VerifyOptions{})
	var nb *NotBuiltError
	require.ErrorAs(t, err, &nb)
	assert.Equal(t, "nb", nb.Lab)
	assert.True(t, errors.Is(err, labdir.ErrNoState))
}

// Pooled opens each daemon once for all its callers and closes it once.
func TestPooledSharesOneConnectionPerURI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fakes := map[string]*fake.Hypervisor{"qemu:///a": fake.New(), "qemu:///b": fake.New()}
	connects := map[string]int{}
	pool, closeAll := Pooled(func(_ context.Context, uri string, _ *slog.Logger) (hypervisor.Hypervisor, error) {
		connects[uri]++
		return fakes[uri], nil
	})
	for _, uri := range []string{"qemu:///a", "qemu:///b", "qemu:///a"} {
		hv, err := pool(ctx, uri, nil)
		require.NoError(t, err)
		require.NoError(t, hv.Close())
	}
	assert.Equal(t, map[string]int{"qemu:///a": 1, "qemu:///b": 1}, connects)
	assert.Equal(t, 0, fakes["qemu:///a"].Closed, "a caller's Close leaves the shared connection open")
	closeAll()
	assert.Equal(t, 1, fakes["qemu:///a"].Closed)
	assert.Equal(t, 1, fakes["qemu:///b"].Closed)
}

// The verbs that need what up recorded use the state Open read and checked,
// and a lab never brought up gets LoadState's own error, naming its
// directory.
func TestGatherOfAnUnbuiltLab(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "ng")
	l, err := Open(context.Background(), s, Options{Connect: hypervisor.Shared(fake.New())})
	require.NoError(t, err)
	_, err = l.Gather(context.Background(), GatherOptions{})
	require.ErrorIs(t, err, labdir.ErrNoState)
	assert.ErrorContains(t, err, s.LabDir)
	assert.ErrorContains(t, err, "bootlab lab up")
}

// lab diagnose needs no lab: a bundle file is diagnosed alone, and a file
// that is no bundle is invalid input, named.
func TestDiagnoseBundleNeedsNoLab(t *testing.T) {
	t.Parallel()
	r, err := DiagnoseBundle(context.Background(), filepath.Join("..", "testdata", "bundles", "healthy.tar.gz"))
	require.NoError(t, err)
	assert.True(t, r.Healthy)
	notBundle := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notBundle, []byte("hello\n"), 0o600))
	_, err = DiagnoseBundle(context.Background(), notBundle)
	assert.True(t, InvalidInput(err), "%v", err)
	assert.Contains(t, err.Error(), notBundle)
	assert.NotEmpty(t, DiagnosisTree().Steps)
}

// A probe lab's gather on the fake hypervisor, whose nodes cannot be
// logged in to (no key yet): the bundle is still written, in --dir, and
// says what it could not see; lab diagnose reads it.
func TestGatherOfAProbeLabWritesABundle(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "gp")
	require.NoError(t, (&labdir.State{Name: s.Name, Spec: s}).Save(s.LabDir))
	l, err := Open(context.Background(), s, Options{Connect: hypervisor.Shared(fake.New())})
	require.NoError(t, err)
	defer l.Close()
	dir := t.TempDir()
	bundle, err := l.Gather(context.Background(), GatherOptions{Dir: dir})
	require.NoError(t, err)
	assert.Equal(t, dir, filepath.Dir(bundle))
	b, err := diagnose.ReadBundle(context.Background(), bundle)
	require.NoError(t, err)
	r := diagnose.Diagnose(b, diagnose.Options{})
	assert.Equal(t, "bootlab", r.Layout)
	assert.False(t, r.Healthy)
}
