package fake_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
)

// The libvirt behaviours lab's tests rely on, as the package doc promises.
func TestFakeBehavesLikeLibvirtWhereLabDependsOnIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := fake.New()

	_, err := f.DefineDomain(ctx, `<domain><name>d</name><devices><interface type="network"><source network="n"/></interface></devices></domain>`)
	require.ErrorContains(t, err, "network n does not exist")

	_, err = f.DefineNetwork(ctx, `<network><name>n</name></network>`)
	require.NoError(t, err)
	d, err := f.DefineDomain(ctx, `<domain><name>d</name></domain>`)
	require.NoError(t, err)
	_, err = f.DefineDomain(ctx, `<domain><name>d</name><uuid>other</uuid></domain>`)
	require.ErrorContains(t, err, "already exists with uuid "+d.UUID)
	_, err = f.DefineDomain(ctx, `<domain><name>d</name><uuid>`+d.UUID+`</uuid></domain>`)
	require.NoError(t, err, "a redefinition that keeps the UUID")

	require.NoError(t, f.CreateSnapshot(ctx, "d", `<domainsnapshot><name>s</name></domainsnapshot>`))
	require.ErrorContains(t, f.UndefineDomain(ctx, "d"), "with 1 snapshots")
	require.NoError(t, f.DeleteSnapshot(ctx, "d", "s"))
	require.NoError(t, f.UndefineDomain(ctx, "d"))
	_, err = f.LookupDomain(ctx, "d")
	require.ErrorIs(t, err, hypervisor.ErrNotFound)

	_, err = f.DefinePool(ctx, `<pool type="dir"><name>p</name></pool>`)
	require.NoError(t, err)
	_, err = f.CreateVolume(ctx, "p", `<volume><name>v</name><capacity>1</capacity></volume>`)
	require.ErrorContains(t, err, "pool p not active")
	require.NoError(t, f.StartPool(ctx, "p"))
	require.NoError(t, f.UploadVolume(ctx, "p", "v", strings.NewReader("abc"), 3))
	assert.Equal(t, int64(3), f.Uploaded["v"])

	_, err = f.NetworkLeases(ctx, "n")
	assert.ErrorIs(t, err, hypervisor.ErrUnsupported)
}

func TestFakeRecordsAndFailsCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := fake.New()
	_, err := f.DefinePool(ctx, `<pool><name>p</name></pool>`)
	require.NoError(t, err)
	f.FailOn = "StartPool p"
	require.ErrorContains(t, f.StartPool(ctx, "p"), "StartPool p: injected failure")
	assert.False(t, f.PoolObjects["p"].Active)
	assert.Equal(t, []string{"DefinePool p", "StartPool p"}, f.Mutations(), "failed calls are recorded too")

	f.Reset()
	assert.Empty(t, f.Mutations())
	require.NoError(t, f.StartPool(ctx, "p"), "Reset clears FailOn")
	assert.True(t, f.PoolObjects["p"].Active)
}

func TestMachineUnderstandsLabsCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := fake.New().Machine
	code, err := m.Run(ctx, "cat > '/lab/x.ign'", strings.NewReader("{}"), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	b, err := m.ReadFile(ctx, "/lab/x.ign")
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b))
	code, _ = m.Run(ctx, "haproxy -v", nil, nil, nil)
	assert.Equal(t, 127, code, "an unknown command without Respond")
	assert.Equal(t, []string{"cat > '/lab/x.ign'", "haproxy -v"}, m.Commands)
	assert.False(t, m.Remote())
	assert.True(t, fake.NewMachine(true).Remote())
}
