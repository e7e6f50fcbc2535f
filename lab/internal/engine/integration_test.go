//go:build integration

package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/internal/engine"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/libvirt"
)

// These tests talk to the real libvirtd through its socket, on the
// test:///default driver: every connection gets fresh in-memory state, so
// each test opens exactly one connection and uses it throughout.

func connect(t *testing.T) *libvirt.Conn {
	t.Helper()
	if _, err := os.Stat("/var/run/libvirt/libvirt-sock"); err != nil {
		t.Fatalf("libvirtd is not running: install libvirt-daemon-system and start it (`mkdir -p /run/libvirt; virtlogd -d; libvirtd -d`): %v", err)
	}
	c, err := libvirt.Connect(context.Background(), "test:///default", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func integSpec(t *testing.T, name string) *spec.Spec {
	dir := t.TempDir()
	img := filepath.Join(dir, "base.img")
	require.NoError(t, os.WriteFile(img, make([]byte, 1<<20), 0o644))
	s := &spec.Spec{Name: name, Libvirt: spec.Libvirt{URI: "test:///default"}, LabDir: filepath.Join(dir, "lab"),
		Topology: spec.Topology{Masters: 3, Workers: 1}, Network: spec.Network{CIDR: "10.123.0.0/24"},
		Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}, Image: spec.Image{Path: img}}
	s.Defaults()
	return s
}

func TestIntegrationHostInfo(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	c := connect(t)
	ctx := context.Background()
	v, err := c.LibvirtVersion(ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^\d+\.\d+\.\d+$`, v)
	nets, err := c.Networks(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, nets, "the test driver has a network called default")
	assert.Equal(t, "default", nets[0].Name)
	assert.NotEmpty(t, nets[0].Prefixes)
	_, err = c.LookupDomain(ctx, "no-such-domain")
	assert.True(t, errors.Is(err, hypervisor.ErrNotFound), "%v", err)
}

func TestIntegrationUpIdempotentDownClean(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	c := connect(t)
	ctx := context.Background()
	s := integSpec(t, "integ")
	// Foreign objects: a network and a domain bootlab did not create.
	_, err := c.DefineNetwork(ctx, `<network><name>foreign-net</name><bridge name="virbr77"/><ip address="10.124.0.1" prefix="24"/></network>`)
	require.NoError(t, err)
	_, err = c.DefineDomain(ctx, `<domain type="test"><name>bootlab-integ-foreign</name><memory unit="MiB">64</memory><os><type>hvm</type></os></domain>`)
	require.NoError(t, err)

	opts := engine.UpOptions{Accelerator: spec.AccelTCG}
	res, err := engine.Up(ctx, c, s, opts)
	require.NoError(t, err)
	assert.True(t, res.Changed)

	net, err := c.LookupNetwork(ctx, s.NetworkName())
	require.NoError(t, err)
	assert.True(t, net.Active)
	assert.Contains(t, net.XML, "api-int.ocp.lab.local")
	vols, err := c.Volumes(ctx, s.PoolName())
	require.NoError(t, err)
	assert.Len(t, vols, 1+len(s.Nodes))
	for _, n := range s.Nodes {
		d, err := c.LookupDomain(ctx, s.DomainName(n))
		require.NoError(t, err)
		assert.True(t, d.Active, n.Name)
		md := plan.ParseLabMetadata(d.XML)
		require.NotNil(t, md, "metadata survives libvirt's round trip")
		assert.Equal(t, s.Name, md.Name)
		assert.Equal(t, n.Role, md.Role)
	}

	res, err = engine.Up(ctx, c, s, opts)
	require.NoError(t, err)
	assert.False(t, res.Changed, "second up changes nothing: %+v", res.Steps)

	st, err := engine.Inspect(ctx, c, s)
	require.NoError(t, err)
	assert.True(t, st.Network.Active)
	for _, n := range st.Nodes {
		assert.Equal(t, "running", n.State, n.Name)
	}

	_, err = engine.Down(ctx, c, s, engine.DownOptions{})
	require.NoError(t, err)
	_, err = c.LookupNetwork(ctx, s.NetworkName())
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
	_, err = c.LookupPool(ctx, s.PoolName())
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
	doms, err := c.Domains(ctx)
	require.NoError(t, err)
	var left []string
	for _, d := range doms {
		if strings.HasPrefix(d.Name, "bootlab-") {
			left = append(left, d.Name)
		}
	}
	assert.Equal(t, []string{"bootlab-integ-foreign"}, left, "only the foreign domain is left")
	_, err = c.LookupNetwork(ctx, "foreign-net")
	assert.NoError(t, err, "the foreign network survives down")
}

func TestIntegrationDownAfterInterruptedUp(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	c := connect(t)
	s := integSpec(t, "half")
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel as soon as the network exists: up stops half way.
	go func() {
		for ctx.Err() == nil {
			if _, err := c.LookupNetwork(context.Background(), s.NetworkName()); err == nil {
				cancel()
				return
			}
		}
	}()
	_, err := engine.Up(ctx, c, s, engine.UpOptions{Accelerator: spec.AccelTCG})
	cancel()
	_ = err // it may have finished before the cancel landed; down must work either way
	_, err = engine.Down(context.Background(), c, s, engine.DownOptions{})
	require.NoError(t, err)
	_, err = c.LookupNetwork(context.Background(), s.NetworkName())
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
	_, err = c.LookupPool(context.Background(), s.PoolName())
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
}

func TestIntegrationVirshSeesNothingOfOurs(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	// test:///default state is per connection: virsh's connection must not
	// see our objects, which shows every test works on its own state.
	c := connect(t)
	s := integSpec(t, "iso")
	_, err := engine.Up(context.Background(), c, s, engine.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	out, err := exec.Command("virsh", "-c", "test:///default", "net-list", "--all", "--name").CombinedOutput()
	require.NoError(t, err, "virsh (apt-get install libvirt-clients): %s", out)
	assert.NotContains(t, string(out), s.NetworkName())
}

func TestIntegrationUpUpdatesNetworkInPlace(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	c := connect(t)
	ctx := context.Background()
	s := integSpec(t, "upd")
	opts := engine.UpOptions{Accelerator: spec.AccelTCG}
	_, err := engine.Up(ctx, c, s, opts)
	require.NoError(t, err)
	before, err := c.LookupNetwork(ctx, s.NetworkName())
	require.NoError(t, err)

	s.Nodes[1].IP = "10.123.0.99" // master-0 moves
	res, err := engine.Up(ctx, c, s, opts)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	after, err := c.LookupNetwork(ctx, s.NetworkName())
	require.NoError(t, err)
	assert.Equal(t, before.UUID, after.UUID, "updated in place, not redefined")
	assert.Contains(t, after.XML, "ip='10.123.0.99'")
	assert.NotContains(t, after.XML, "10.123.0.11'")

	res, err = engine.Up(ctx, c, s, opts)
	require.NoError(t, err)
	assert.False(t, res.Changed, "converged: %+v", res.Steps)
}

// libvirt's own states behind StartDomainPaused and ResumeDomain: a domain
// started paused is active and paused, resumes to running, and resuming
// a running domain is no error. Up leaves every node it started running.
func TestIntegrationStartPausedThenResume(t *testing.T) {
	// Not parallel: one test:///default state per process (above).
	c := connect(t)
	ctx := context.Background()
	s := integSpec(t, "paused")
	_, err := engine.Up(ctx, c, s, engine.UpOptions{Accelerator: spec.AccelTCG})
	require.NoError(t, err)
	name := s.DomainName(s.Nodes[0])
	for _, n := range s.Nodes {
		o, err := c.LookupDomain(ctx, s.DomainName(n))
		require.NoError(t, err)
		assert.True(t, o.Active && !o.Paused, "%s after up: active %v, paused %v", n.Name, o.Active, o.Paused)
	}

	require.NoError(t, c.DestroyDomain(ctx, name))
	require.NoError(t, c.StartDomainPaused(ctx, name))
	o, err := c.LookupDomain(ctx, name)
	require.NoError(t, err)
	assert.True(t, o.Active && o.Paused, "started paused: active %v, paused %v", o.Active, o.Paused)
	require.NoError(t, c.ResumeDomain(ctx, name))
	require.NoError(t, c.ResumeDomain(ctx, name), "a running domain")
	o, err = c.LookupDomain(ctx, name)
	require.NoError(t, err)
	assert.True(t, o.Active && !o.Paused, "resumed: active %v, paused %v", o.Active, o.Paused)
	_, err = engine.Down(ctx, c, s, engine.DownOptions{})
	require.NoError(t, err)
}
