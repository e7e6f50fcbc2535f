package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// copiedSpec is what a trainer makes with `lab config -f ux1.yaml > ux7.yaml`
// and a new name: the copy keeps ux1's labDir and poolDir.
func copiedSpec(t *testing.T, from *spec.Spec, name, cidr string) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Name: name, LabDir: from.LabDir, Storage: spec.Storage{PoolDir: from.Storage.PoolDir},
		Topology: spec.Topology{Masters: 2, Workers: 1}, Network: spec.Network{CIDR: cidr}}
	s.Defaults()
	return s
}

func TestUpRecordsIdentityBeforeAnyObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "ux1", false)
	// The first libvirt call fails: the lab directory must already say
	// whose it is, so `down` of this lab (and only this lab) finds it.
	hv.FailOn = "DefineNetwork bootlab-ux1"
	_, err := Up(ctx, hv, s, upOpts())
	require.Error(t, err)
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, "ux1", st.Name)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, st.UUID)
	assert.Nil(t, st.Spec, "no up succeeded: no applied spec is recorded")

	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	st2, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, st.UUID, st2.UUID, "the identity never changes")
	for name, d := range hv.DomainObjects {
		md := plan.ParseLabMetadata(d.XML)
		require.NotNil(t, md, name)
		assert.Equal(t, st.UUID, md.LabUUID, "domain %s carries the lab UUID", name)
	}
}

func TestCopiedSpecNeverActsOnTheOriginalLab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	ux1 := testSpec(t, "ux1", false)
	_, err := Up(ctx, hv, ux1, upOpts())
	require.NoError(t, err)
	ux7 := copiedSpec(t, ux1, "ux7", "10.88.7.0/24")

	hv.Reset()
	var idErr *labdir.IdentityError
	_, err = Down(ctx, hv, ux7, DownOptions{})
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, "ux1", idErr.DirLab)
	assert.Equal(t, "ux7", idErr.SpecLab)
	assert.Contains(t, err.Error(), "remove both lines")
	_, err = Up(ctx, hv, ux7, upOpts())
	require.ErrorAs(t, err, &idErr)
	_, _, err = labdir.Resolve(ux7)
	require.ErrorAs(t, err, &idErr)
	assert.Empty(t, hv.Mutations(), "nothing of ux1 (or anything else) was touched")
	assert.Len(t, hv.DomainObjects, 4)

	st, err := labdir.LoadState(ux1.LabDir)
	require.NoError(t, err)
	assert.Equal(t, "ux1", st.Spec.Name, "ux1's state is untouched")
}

func TestSameNameOtherLabDirLeavesTheOtherLabsDomains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	a := testSpec(t, "twin", false)
	_, err := Up(ctx, hv, a, upOpts())
	require.NoError(t, err)
	// The same name with another lab directory: another lab to bootlab.
	b := testSpec(t, "twin", false)
	require.NotEqual(t, a.LabDir, b.LabDir)

	hv.Reset()
	_, err = Down(ctx, hv, b, DownOptions{})
	require.NoError(t, err)
	for _, m := range hv.Mutations() {
		assert.NotRegexp(t, `Domain `, m, "no domain of the other lab is touched")
	}
	assert.Len(t, hv.DomainObjects, 4)

	_, err = Up(ctx, hv, b, upOpts())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this lab did not create it", "the network check refuses before any domain is reached")
}

func TestRefusedUpLeavesTheStateAsItWas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "ux2", false)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)

	changed := testSpec(t, "ux2", false)
	changed.LabDir, changed.Storage.PoolDir = s.LabDir, s.Storage.PoolDir
	changed.Network = spec.Network{CIDR: "10.240.4.0/24"}
	changed.Nodes = nil
	changed.Defaults()
	_, err = Up(ctx, hv, changed, upOpts())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot change in place")

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, "10.88.0.0/24", st.Spec.Network.CIDR, "the state records the lab that exists")
	applied, _, err := labdir.Resolve(changed)
	require.NoError(t, err)
	assert.Equal(t, "10.88.0.0/24", applied.Network.CIDR, "verify and status act on the lab's real addresses")
}

func TestFindLabs(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	labs, err := labdir.Find(home)
	require.NoError(t, err)
	assert.Empty(t, labs)
	for _, name := range []string{"b", "a"} {
		st := &labdir.State{Name: name, UUID: labdir.NewLabUUID()}
		require.NoError(t, st.Save(filepath.Join(home, "labs", name)))
	}
	labs, err = labdir.Find(home)
	require.NoError(t, err)
	require.Len(t, labs, 2)
	assert.Equal(t, "a", labs[0].Name)
	assert.Equal(t, filepath.Join(home, "labs", "a"), labs[0].Dir)
	assert.False(t, errors.Is(err, labdir.ErrNoState))
}

// A lab whose first up on a remote host was cut short (no spec recorded
// yet) is still looked for on that host: lab down --name, which knows only
// the name, reaches the host the up was making objects on.
func TestACutShortLabIsFoundOnItsHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "ux9", false)
	s.Libvirt = spec.Libvirt{URI: "qemu+ssh://root@rack2.example/system", HostDir: "/srv/bootlab/labs/ux9"}
	hv.FailOn = "DefineNetwork bootlab-ux9"
	_, err := Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "injected failure")
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	require.Nil(t, st.Spec, "the first up did not succeed")

	byName := testSpec(t, "ux9", false) // --name only: this machine's libvirt by default
	byName.LabDir = s.LabDir
	applied, _, err := labdir.Resolve(byName)
	require.NoError(t, err)
	assert.Equal(t, s.Libvirt, applied.Libvirt, "the lab is looked for where its objects were being made")
}
