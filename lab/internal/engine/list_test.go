package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// listSpec is a lab whose directory is under home, as `up` would make it.
func listSpec(t *testing.T, home, name, cidr string) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Name: name, Profile: spec.ProfileProbe, Libvirt: spec.Libvirt{URI: "qemu:///fake"}, Topology: spec.Topology{Masters: 1, Workers: 1},
		Network: spec.Network{CIDR: cidr}, LabDir: filepath.Join(home, "labs", name), Storage: spec.Storage{PoolDir: filepath.Join(home, "pools", name)}}
	s.Defaults()
	return s
}

func fakeConnect(hv *fake.Hypervisor) hypervisor.Connector { return hypervisor.Shared(hv) }

func TestListFindsLabDirsAndOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	hv := fake.New()

	a := listSpec(t, home, "alpha", "10.90.1.0/24")
	_, err := Up(ctx, hv, a, upOpts())
	require.NoError(t, err)
	ast, err := labdir.LoadState(a.LabDir)
	require.NoError(t, err)
	require.NoError(t, labdir.SaveVerifyRecord(a.LabDir, &labdir.VerifyRecord{Time: time.Now(), OK: false, Total: 10, Passed: 8, LabUUID: ast.UUID,
		Failed: []labdir.VerifyFailure{{Group: "host", Name: "lb haproxy", Detail: "not running"}, {Group: "host", Name: "dns api"}}}))
	// One of alpha's domains is shut off.
	hv.DomainObjects[a.DomainName(a.Nodes[2])].Active = false

	// orphan: its lab directory was removed by hand; libvirt still has it.
	o := listSpec(t, home, "orphan", "10.90.2.0/24")
	_, err = Up(ctx, hv, o, upOpts())
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(o.LabDir))

	// A directory without state.json is not a lab; a broken state is listed with its error.
	require.NoError(t, os.MkdirAll(filepath.Join(home, "labs", "empty"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "labs", "broken"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "labs", "broken", "state.json"), []byte("{"), 0o600))

	labs, err := List(ctx, ListOptions{Home: home, Connect: fakeConnect(hv)})
	require.NoError(t, err)
	require.Len(t, labs, 3)

	assert.Equal(t, "alpha", labs[0].Name)
	assert.Equal(t, spec.ProfileProbe, labs[0].Profile)
	assert.Equal(t, "10.90.1.0/24", labs[0].CIDR)
	assert.Equal(t, "qemu:///fake", labs[0].URI)
	assert.Equal(t, 3, labs[0].NodesTotal)
	assert.Equal(t, 2, labs[0].NodesUp)
	assert.False(t, labs[0].Orphaned)
	require.NotNil(t, labs[0].Verify)
	assert.Equal(t, "2 of 10 failed", labs[0].Verify.Summary())
	assert.Empty(t, labs[0].Error)

	assert.Equal(t, "broken", labs[1].Name)
	assert.Contains(t, labs[1].Error, "parse lab state")

	assert.Equal(t, "orphan", labs[2].Name)
	assert.True(t, labs[2].Orphaned)
	assert.Equal(t, "bootlab-orphan", labs[2].Network)
	assert.Equal(t, []string{"bootlab-orphan-bootstrap", "bootlab-orphan-master-0", "bootlab-orphan-worker-0"}, labs[2].Domains)
	assert.Equal(t, 3, labs[2].NodesTotal)
	assert.Equal(t, "qemu:///fake", labs[2].URI)
	assert.Contains(t, labs[2].OrphanHint(), "net-undefine bootlab-orphan")
	assert.Contains(t, labs[2].OrphanHint(), "lab down --name orphan")
}

// A network named like ours but carrying someone else's metadata, and
// domains without bootlab metadata, are not labs.
func TestListIgnoresForeignObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	hv.NetworkObjects["bootlab-x"] = &hypervisor.Object{Name: "bootlab-x", XML: `<network><name>bootlab-x</name><metadata><o:x xmlns:o="https://example.com/other"/></metadata></network>`}
	hv.DomainObjects["bootlab-y-master-0"] = &hypervisor.Object{Name: "bootlab-y-master-0", XML: `<domain type="qemu"><name>bootlab-y-master-0</name></domain>`}
	labs, err := List(ctx, ListOptions{Home: t.TempDir(), URIs: []string{"qemu:///fake"}, Connect: fakeConnect(hv)})
	require.NoError(t, err)
	assert.Empty(t, labs)
}

// No lab home at all is an empty list, not an error.
func TestListEmptyHome(t *testing.T) {
	t.Parallel()
	labs, err := List(context.Background(), ListOptions{Home: filepath.Join(t.TempDir(), "nothing")})
	require.NoError(t, err)
	assert.NotNil(t, labs)
	assert.Empty(t, labs)
}

// A lab whose labDir is elsewhere is listed through a symlink in the home.
func TestListFollowsSymlinkedLabDir(t *testing.T) {
	t.Parallel()
	home, elsewhere := t.TempDir(), t.TempDir()
	s := listSpec(t, elsewhere, "linked", "10.90.3.0/24")
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "labs"), 0o755))
	require.NoError(t, os.Symlink(s.LabDir, filepath.Join(home, "labs", "linked")))
	labs, err := List(context.Background(), ListOptions{Home: home})
	require.NoError(t, err)
	require.Len(t, labs, 1)
	assert.Equal(t, "linked", labs[0].Name)
	assert.Equal(t, 3, labs[0].NodesTotal)
}

// lab list shows the last verify result only when it is this lab's: one
// written for an earlier lab of the same name (another UUID) is not.
func TestListShowsOnlyTheLabsOwnVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	hv := fake.New()
	s := listSpec(t, home, "again", "10.90.5.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	require.NotEmpty(t, st.UUID)
	for _, tc := range []struct {
		labUUID string
		want    string
	}{{"an-earlier-lab-named-again", "never verified"}, {"", "never verified"}, {st.UUID, "1/1 ok"}} {
		require.NoError(t, labdir.SaveVerifyRecord(s.LabDir, &labdir.VerifyRecord{Time: time.Now(), OK: true, Total: 1, Passed: 1, LabUUID: tc.labUUID}))
		labs, err := List(ctx, ListOptions{Home: home, Connect: fakeConnect(hv)})
		require.NoError(t, err)
		require.Len(t, labs, 1)
		assert.Equal(t, tc.want, labs[0].Verify.Summary(), "a record for %q", tc.labUUID)
		assert.Empty(t, labs[0].Error)
	}
}

// `lab down` removes the last verify result with the rest of the lab's
// files, so the lab directory goes and a later lab of the same name does
// not inherit it.
func TestDownRemovesVerifyRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	hv := fake.New()
	s := listSpec(t, home, "gone", "10.90.4.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	require.NoError(t, labdir.SaveVerifyRecord(s.LabDir, &labdir.VerifyRecord{Time: time.Now(), OK: true, Total: 1, Passed: 1}))
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.NoFileExists(t, labdir.VerifyRecordPath(s.LabDir))
	assert.NoDirExists(t, s.LabDir)
}

// A lab whose labDir: lies outside the home is found through the console
// log paths of its domains, and is not an orphan; a directory those paths
// point at that records another lab is not taken for it.
func TestListFindsLabDirThroughDomains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, elsewhere := t.TempDir(), t.TempDir()
	hv := fake.New()
	s := listSpec(t, elsewhere, "away", "10.90.5.0/24")
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)

	labs, err := List(ctx, ListOptions{Home: home, URIs: []string{"qemu:///fake"}, Connect: fakeConnect(hv)})
	require.NoError(t, err)
	require.Len(t, labs, 1)
	assert.Equal(t, "away", labs[0].Name)
	assert.False(t, labs[0].Orphaned)
	assert.Equal(t, s.LabDir, labs[0].Dir)
	assert.Equal(t, 3, labs[0].NodesUp)
	assert.Equal(t, "10.90.5.0/24", labs[0].CIDR)

	// The directory now records another lab: "away" is an orphan again.
	other := listSpec(t, elsewhere, "other", "10.90.6.0/24")
	other.LabDir = s.LabDir
	require.NoError(t, (&labdir.State{Spec: other}).Save(s.LabDir))
	labs, err = List(ctx, ListOptions{Home: home, URIs: []string{"qemu:///fake"}, Connect: fakeConnect(hv)})
	require.NoError(t, err)
	require.Len(t, labs, 1)
	assert.True(t, labs[0].Orphaned)
}
