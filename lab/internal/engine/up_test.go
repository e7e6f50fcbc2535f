package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// testSpec is a small lab on a URI that is not test:// so that the base
// image upload runs; the load balancer is skipped in every Up.
func testSpec(t *testing.T, name string, withImage bool) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	s := &spec.Spec{Name: name, LabDir: filepath.Join(dir, "lab"), Topology: spec.Topology{Masters: 2, Workers: 1},
		Network: spec.Network{CIDR: "10.88.0.0/24"}, Storage: spec.Storage{PoolDir: filepath.Join(dir, "pool")}}
	if withImage {
		img := filepath.Join(dir, "base.qcow2")
		hdr := make([]byte, 4096)
		copy(hdr, "QFI\xfb")
		hdr[24+4] = 0x40 // virtual size 1 GiB, big endian
		require.NoError(t, os.WriteFile(img, hdr, 0o644))
		s.Image.Path = img
	}
	s.Defaults()
	return s
}

func upOpts() UpOptions { return UpOptions{Accelerator: spec.AccelTCG, SkipLoadBalancer: true} }

// stepDetails joins the details of every step of res, for a test that
// looks for what up said it did.
func stepDetails(res *UpResult) string {
	var details []string
	for _, st := range res.Steps {
		details = append(details, st.Detail)
	}
	return strings.Join(details, "; ")
}

func countPrefix(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func TestUpCreatesEverythingThenNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)

	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	calls := hv.Mutations()
	assert.Equal(t, 1, countPrefix(calls, "DefineNetwork bootlab-t"))
	assert.Equal(t, 1, countPrefix(calls, "DefinePool bootlab-t"))
	assert.Equal(t, 5, countPrefix(calls, "CreateVolume bootlab-t/"), "base + 4 overlays")
	assert.Equal(t, 1, countPrefix(calls, "UploadVolume bootlab-t/base.qcow2"))
	assert.Equal(t, 4, countPrefix(calls, "DefineDomain "))
	assert.Equal(t, 4, countPrefix(calls, "StartDomainPaused "))
	assert.Equal(t, 4, countPrefix(calls, "ResumeDomain "))
	assert.Equal(t, int64(4096), hv.Uploaded["base.qcow2"])

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, hv.NetworkObjects["bootlab-t"].UUID, st.NetworkUUID)
	assert.Equal(t, hv.PoolObjects["bootlab-t"].UUID, st.PoolUUID)
	assert.Equal(t, spec.AccelTCG, st.Accelerator)

	hv.Reset()
	res, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.False(t, res.Changed, "second up: %+v", res.Steps)
	assert.Empty(t, hv.Mutations(), "second up must change nothing")
}

func TestUpResumesAfterFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	hv.FailOn = "DefineDomain bootlab-t-master-1"
	_, err := Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "injected failure")

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.NotEmpty(t, st.NetworkUUID, "objects made before the failure are recorded")
	assert.NotEmpty(t, st.PoolUUID)

	hv.Reset()
	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	calls := hv.Mutations()
	assert.Equal(t, []string{"DefineDomain bootlab-t-master-1", "ResumeDomain bootlab-t-master-1", "StartDomainPaused bootlab-t-master-1"}, calls,
		"resume makes only what is missing")
}

func TestUpRedoesInterruptedUpload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	hv.FailOn = "UploadVolume bootlab-t/base.qcow2"
	_, err := Up(ctx, hv, s, upOpts())
	require.Error(t, err)
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.Contains(t, calls, "DeleteVolume bootlab-t/base.qcow2")
	assert.Contains(t, calls, "UploadVolume bootlab-t/base.qcow2")
}

func TestUpDefersRolesAndStartNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	opts := upOpts()
	opts.DeferRoles = []spec.Role{spec.RoleWorker}
	_, err := Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.False(t, hv.DomainObjects["bootlab-t-worker-0"].Active)
	assert.True(t, hv.DomainObjects["bootlab-t-master-0"].Active)

	hv.Reset()
	_, err = Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations(), "a deferred worker stays off on re-run")

	require.NoError(t, StartNodes(ctx, hv, s, spec.RoleWorker))
	assert.True(t, hv.DomainObjects["bootlab-t-worker-0"].Active)
}

func TestUpRedefinesChangedDomain(t *testing.T) {
	t.Parallel()
	// The fake refuses, as libvirt does, a redefinition without the
	// domain's UUID ("already exists with uuid"): converge must keep it.
	for _, tc := range []struct {
		profile spec.Profile
		want    []string
		detail  string
	}{
		// A probe node keeps nothing: it is restarted so the change applies now.
		{spec.ProfileProbe, []string{"DefineDomain bootlab-t-master-0", "DestroyDomain bootlab-t-master-0", "ResumeDomain bootlab-t-master-0", "StartDomainPaused bootlab-t-master-0"}, "master-0 redefined and restarted"},
		// A real node is left running; the change applies at its next boot.
		{spec.ProfileOpenShift, []string{"DefineDomain bootlab-t-master-0"}, "master-0 redefined (takes effect at its next boot"},
	} {
		t.Run(string(tc.profile), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			hv := fake.New()
			s := testSpec(t, "t", false)
			s.Profile = tc.profile
			_, err := Up(ctx, hv, s, upOpts())
			require.NoError(t, err)
			uuid := hv.DomainObjects["bootlab-t-master-0"].UUID
			s.Nodes[1].MemoryMiB = 512
			hv.Reset()
			res, err := Up(ctx, hv, s, upOpts())
			require.NoError(t, err)
			assert.True(t, res.Changed)
			assert.Equal(t, tc.want, hv.Mutations())
			assert.Equal(t, uuid, hv.DomainObjects["bootlab-t-master-0"].UUID)
			assert.True(t, hv.DomainObjects["bootlab-t-master-0"].Active)
			assert.Contains(t, stepDetails(res), tc.detail)
		})
	}
}

func TestUpRefusesForeignObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	// Somebody else's network with our name (not in our state).
	_, err := hv.DefineNetwork(ctx, `<network><name>bootlab-t</name></network>`)
	require.NoError(t, err)
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "this lab did not create it")
	assert.Empty(t, hv.Mutations())

	// A domain with our name but no bootlab metadata.
	hv2 := fake.New()
	s2 := testSpec(t, "u", false)
	_, err = hv2.DefineDomain(ctx, `<domain><name>bootlab-u-master-0</name></domain>`)
	require.NoError(t, err)
	_, err = Up(ctx, hv2, s2, upOpts())
	require.ErrorContains(t, err, "not node master-0 of lab u")
	assert.NotNil(t, hv2.DomainObjects["bootlab-u-master-0"])
}

func TestUpHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hv := fake.New()
	_, err := Up(ctx, hv, testSpec(t, "t", false), upOpts())
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, hv.Mutations())
}

// Ctrl-C during a step is reported as an interrupt (so the CLI offers to
// resume), whether the step then fails for it or finishes anyway.
func TestRunStepsReportsInterrupt(t *testing.T) {
	t.Parallel()
	st := status.New(io.Discard, false)
	log := slog.New(slog.DiscardHandler)

	ctx, cancel := context.WithCancel(context.Background())
	var ran []string
	_, err := runSteps(ctx, st, log, []step{
		{"start haproxy", func(context.Context) (string, error) {
			ran = append(ran, "haproxy")
			cancel()
			return "", errors.New("signal: killed")
		}},
		{"nodes", func(context.Context) (string, error) { ran = append(ran, "nodes"); return "x", nil }},
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "start haproxy interrupted (signal: killed)")
	assert.Equal(t, []string{"haproxy"}, ran)

	ctx, cancel = context.WithCancel(context.Background())
	res, err := runSteps(ctx, st, log, []step{
		{"nodes", func(context.Context) (string, error) { cancel(); return "defined", nil }},
	})
	require.ErrorIs(t, err, context.Canceled, "an interrupt in the last step is not swallowed")
	assert.Len(t, res, 1)
}

// Once interrupted, parallel starts no more items.
func TestParallelStopsStartingWhenInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var started []int
	n, err := parallel(ctx, []int{1, 2, 3, 4}, 1, func(_ context.Context, i int) (bool, error) {
		started = append(started, i)
		if i == 2 {
			cancel()
		}
		return true, nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []int{1, 2}, started)
	assert.Equal(t, 2, n)
}

func TestDownRemovesOnlyThisLab(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	other := testSpec(t, "t-x", false) // its domains also start with "bootlab-t-"
	other.Network.CIDR = "10.89.0.0/24"
	other.Network.Bridge = ""
	other.Nodes = nil
	other.Network.Gateway, other.Network.APIAddress, other.Network.IngressAddress = "", "", ""
	other.Defaults()
	_, err := Up(ctx, hv, other, upOpts())
	require.NoError(t, err)
	_, err = hv.DefineNetwork(ctx, `<network><name>default</name></network>`)
	require.NoError(t, err)
	_, err = hv.DefineDomain(ctx, `<domain><name>bootlab-t-imposter</name></domain>`)
	require.NoError(t, err)

	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)

	assert.Nil(t, hv.NetworkObjects["bootlab-t"])
	assert.Nil(t, hv.PoolObjects["bootlab-t"])
	for name := range hv.DomainObjects {
		assert.False(t, strings.HasPrefix(name, "bootlab-t-master") && !strings.HasPrefix(name, "bootlab-t-x-"), name)
	}
	assert.NotNil(t, hv.NetworkObjects["default"], "foreign network survives")
	assert.NotNil(t, hv.DomainObjects["bootlab-t-imposter"], "domain without metadata survives")
	assert.NotNil(t, hv.NetworkObjects["bootlab-t-x"], "the other lab's network survives")
	assert.Len(t, hv.DomainObjects, 1+len(other.Nodes), "the other lab's domains survive")
	_, err = os.Stat(labdir.StatePath(s.LabDir))
	assert.True(t, os.IsNotExist(err), "state removed")

	// Down again is a no-op.
	hv.Reset()
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations())
}

func TestDownAfterHalfFailedUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	hv.FailOn = "CreateVolume bootlab-t/master-1.qcow2"
	_, err := Up(ctx, hv, s, upOpts())
	require.Error(t, err)
	hv.Reset()
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, hv.NetworkObjects)
	assert.Empty(t, hv.PoolObjects)
	assert.Empty(t, hv.DomainObjects)
}

// DownSteps says what it removed; a lab that is not there changes nothing.
func TestDownStepsReportWhatWasRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	steps, err := Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	changed := map[string]string{}
	for _, st := range steps {
		if st.Changed {
			changed[st.Name] = st.Detail
		}
	}
	assert.Equal(t, "4 deleted", changed["Deleting nodes"])
	assert.Equal(t, "deleted", changed["Deleting network bootlab-t"])

	steps, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	for _, st := range steps {
		assert.False(t, st.Changed, "second down: %+v", st)
	}
	absent := testSpec(t, "absent", false)
	steps, err = Down(ctx, hv, absent, DownOptions{})
	require.NoError(t, err)
	for _, st := range steps {
		assert.False(t, st.Changed, "down of a lab that was never up: %+v", st)
	}
}

// Nodes dropped from a real lab's spec are not deleted by up (they may hold
// a cluster member's data), but it says so and how; a probe lab converges:
// the dropped node goes, with its disk.
func TestUpNodesDroppedFromTheSpec(t *testing.T) {
	t.Parallel()
	for _, profile := range []spec.Profile{spec.ProfileOpenShift, spec.ProfileProbe} {
		t.Run(string(profile), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			hv := fake.New()
			s := testSpec(t, "t", false)
			s.Profile = profile
			_, err := Up(ctx, hv, s, upOpts())
			require.NoError(t, err)

			smaller := &spec.Spec{Name: "t", Profile: profile, LabDir: s.LabDir, Topology: spec.Topology{Masters: 2, Workers: 0},
				Network: s.Network, Storage: s.Storage}
			smaller.Defaults()
			var logs bytes.Buffer
			opts := upOpts()
			opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
			res, err := Up(ctx, hv, smaller, opts)
			require.NoError(t, err)
			if profile == spec.ProfileOpenShift {
				assert.Contains(t, logs.String(), "nodes no longer in the spec")
				assert.Contains(t, logs.String(), "virsh undefine bootlab-t-NODE")
				assert.Contains(t, logs.String(), "nodes=worker-0")
				assert.NotNil(t, hv.DomainObjects["bootlab-t-worker-0"], "up deletes no real node")
			} else {
				assert.Nil(t, hv.DomainObjects["bootlab-t-worker-0"], "the probe node is gone")
				assert.Nil(t, hv.PoolVolumes["bootlab-t"]["worker-0.qcow2"], "with its disk")
				assert.Contains(t, stepDetails(res), "removed worker-0 (no longer in the spec)")
			}

			logs.Reset()
			_, err = Up(ctx, hv, s, opts)
			require.NoError(t, err)
			assert.NotContains(t, logs.String(), "no longer in the spec")
			assert.True(t, hv.DomainObjects["bootlab-t-worker-0"].Active, "scaling up again brings it back")
		})
	}
}

// When a probe node's Ignition changed (the lab gained a node, so the
// served config lists one more) every node restarts to read its config
// again: the masters serve what they fetched from the bootstrap at boot.
func TestUpRestartsProbeNodesWhoseIgnitionChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	write := func(node, content string) {
		n, _ := s.Node(node)
		require.NoError(t, os.MkdirAll(filepath.Dir(labdir.Ignition(s, n)), 0o755))
		require.NoError(t, os.WriteFile(labdir.Ignition(s, n), []byte(content), 0o600))
	}
	for _, n := range s.Nodes {
		write(n.Name, `{"ignition":{"version":"3.2.0"},"nodes":3}`)
	}
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	oldBoot, err := ReadBootFiles(s)
	require.NoError(t, err)
	write("bootstrap", `{"ignition":{"version":"3.2.0"},"nodes":4}`)
	newBoot, err := ReadBootFiles(s)
	require.NoError(t, err)
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	// The new Ignition is uploaded as a new volume, the old one removed
	// once no domain names it.
	want := []string{
		"CreateVolume bootlab-t/boot-bootstrap-" + newBoot.Ignition["bootstrap"].Digest + ".ign",
		"UploadVolume bootlab-t/boot-bootstrap-" + newBoot.Ignition["bootstrap"].Digest + ".ign",
		"DeleteVolume bootlab-t/boot-bootstrap-" + oldBoot.Ignition["bootstrap"].Digest + ".ign",
	}
	for _, n := range s.Nodes {
		d := s.DomainName(n)
		want = append(want, "DefineDomain "+d, "DestroyDomain "+d, "ResumeDomain "+d, "StartDomainPaused "+d)
	}
	sort.Strings(want)
	assert.Equal(t, want, hv.Mutations())
	for _, n := range s.Nodes {
		assert.True(t, hv.DomainObjects[s.DomainName(n)].Active, n.Name)
	}

	// Unchanged configs: nothing restarts.
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations())
}

// Two commands never change one lab at once: the second is refused, naming
// the lock, and nothing is created; once the first is done it proceeds.
func TestUpAndDownRefuseALabBeingChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	// The first command has claimed the lab directory (lab up writes the
	// lab's identity before anything else) and holds the lock.
	require.NoError(t, claimLabDir(s, ""))
	unlock, err := labdir.Lock(s, true)
	require.NoError(t, err)
	_, err = Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "lab t is being changed by another bootlab command")
	assert.Empty(t, hv.Mutations())
	_, err = Down(ctx, hv, s, DownOptions{})
	require.ErrorContains(t, err, "lab t is being changed by another bootlab command")
	unlock()

	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	_, err = os.Stat(s.LabDir)
	assert.True(t, os.IsNotExist(err), "down leaves no lock file (or lab directory) behind")
}

func TestDownKeepImages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	_, err = Down(ctx, hv, s, DownOptions{KeepImages: true})
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.NotContains(t, calls, "DeleteVolume bootlab-t/base.qcow2")
	assert.NotContains(t, calls, "DeletePool bootlab-t")
	assert.Contains(t, calls, "DeleteVolume bootlab-t/master-0.qcow2")
}

func TestRemoveNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	require.NoError(t, RemoveNode(ctx, hv, s, "bootstrap"))
	assert.Nil(t, hv.DomainObjects["bootlab-t-bootstrap"])
	assert.Nil(t, hv.PoolVolumes["bootlab-t"]["bootstrap.qcow2"])
	assert.NotNil(t, hv.DomainObjects["bootlab-t-master-0"])
	assert.ErrorContains(t, RemoveNode(ctx, hv, s, "nope"), `no node "nope"`)
}

func TestInspect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	hv.Caps = hypervisor.Capabilities{} // libvirt's test driver
	s := testSpec(t, "t", false)
	s.Libvirt.URI = "test:///default"
	opts := upOpts()
	opts.DeferRoles = []spec.Role{spec.RoleWorker}
	_, err := Up(ctx, hv, s, opts)
	require.NoError(t, err)
	st, err := Inspect(ctx, hv, s)
	require.NoError(t, err)
	assert.True(t, st.Network.Active)
	assert.Equal(t, s.Network.Bridge, st.Network.Bridge)
	assert.Contains(t, st.DNS, DNSRecord{Name: "api.ocp.lab.local", IP: s.Network.APIAddress})
	assert.Contains(t, st.DNS, DNSRecord{Name: "*.apps.ocp.lab.local", IP: s.Network.IngressAddress})
	assert.Contains(t, st.DNS, DNSRecord{Name: "master-1.ocp.lab.local", IP: s.Nodes[2].IP})
	require.Len(t, st.Nodes, 4)
	assert.Equal(t, "running", st.Nodes[0].State)
	assert.Equal(t, "shut off", st.Nodes[3].State)
}

func TestEnsureSSHKey(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "k", LabDir: t.TempDir()}
	require.NoError(t, EnsureSSHKey(s))
	fi, err := os.Stat(labdir.SSHKey(s))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	pub, err := SSHPublicKey(s)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(pub, "ssh-ed25519 "), pub)
	require.NoError(t, EnsureSSHKey(s))
	pub2, _ := SSHPublicKey(s)
	assert.Equal(t, pub, pub2, "an existing key is kept")
	require.NoError(t, os.Remove(labdir.SSHKey(s)+".pub"))
	require.NoError(t, EnsureSSHKey(s))
	pub3, _ := SSHPublicKey(s)
	assert.Equal(t, pub, pub3, "the public half is derived again")
}

func TestKeepImagesSkipsUploadOnNextUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	_, err = Down(ctx, hv, s, DownOptions{KeepImages: true})
	require.NoError(t, err)
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.Contains(t, calls, "DefinePool bootlab-t")
	assert.NotContains(t, calls, "UploadVolume bootlab-t/base.qcow2", "the kept base image is not uploaded again")
	assert.NotContains(t, calls, "CreateVolume bootlab-t/base.qcow2")
}

func TestUpRefusesNetworkDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	s.Network.Bridge = "blother"
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "cannot change in place")
	assert.ErrorContains(t, err, "bridge blother")
	assert.ErrorContains(t, err, "bootlab lab down")
	assert.Empty(t, hv.Mutations())
}

func TestUpUpdatesReservationsInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", false)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)

	// master-0 moves to .99 and a worker joins.
	s.Nodes[1].IP = "10.88.0.99"
	s.Nodes = append(s.Nodes, spec.Node{Name: "worker-1", Role: spec.RoleWorker, VCPUs: 1, MemoryMiB: 256, DiskGiB: 1,
		MAC: spec.DeriveMAC("t", "worker-1"), IP: "10.88.0.21"})
	hv.Reset()
	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	calls := hv.Mutations()
	assert.Equal(t, 2, countPrefix(calls, "UpdateNetwork bootlab-t delete"), "old master-0 DHCP and DNS entries: %v", calls)
	assert.Equal(t, 4, countPrefix(calls, "UpdateNetwork bootlab-t add"), "new master-0 and worker-1 entries: %v", calls)
	assert.Contains(t, calls, "DefineDomain bootlab-t-worker-1")
	assert.NotContains(t, calls, "DefineNetwork bootlab-t")

	hv.Reset()
	res, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.False(t, res.Changed, "converged: %v", hv.Mutations())
}

// After `lab pivot` destroyed a real lab's bootstrap, a later up converges
// the rest and does not bring the bootstrap VM or its disk back.
func TestUpAfterPivotLeavesBootstrapGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	s.Profile = spec.ProfileOpenShift
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	st.BootstrapRemoved = true
	require.NoError(t, st.Save(s.LabDir))
	require.NoError(t, RemoveNode(ctx, hv, s, "bootstrap"))

	hv.Reset()
	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.False(t, res.Changed, "up after pivot: %+v", res.Steps)
	assert.Zero(t, countPrefix(hv.Mutations(), "DefineDomain bootlab-t-bootstrap"))
	assert.Zero(t, countPrefix(hv.Mutations(), "CreateVolume bootlab-t/bootstrap"))

	// A probe lab keeps its bootstrap VM after pivot (only the LB changes).
	s.Profile = spec.ProfileProbe
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.Equal(t, 1, countPrefix(hv.Mutations(), "DefineDomain bootlab-t-bootstrap"))
}

// A lab that does not exist reports empty lists, so `status -o json` has
// "dns": [] and "nodes": [...] rather than null for scripts to trip on.
func TestInspectAbsentLabHasEmptyLists(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "absent", false)
	st, err := Inspect(context.Background(), fake.New(), s)
	require.NoError(t, err)
	data, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"dns":[]`)
	assert.NotContains(t, string(data), `null`)
}

// A class's lab records its class with its identity, so `class down` finds
// it; a lab up on its own records none.
func TestUpRecordsClass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testSpec(t, "ws-alice", true)
	opts := upOpts()
	opts.Class = "ws"
	_, err := Up(ctx, fake.New(), s, opts)
	require.NoError(t, err)
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, "ws", st.Class)
	assert.NotEmpty(t, st.UUID)

	solo := testSpec(t, "solo", true)
	_, err = Up(ctx, fake.New(), solo, upOpts())
	require.NoError(t, err)
	st, err = labdir.LoadState(solo.LabDir)
	require.NoError(t, err)
	assert.Empty(t, st.Class)
}

// Every node starts paused and none runs before the last has started:
// a guest booting under TCG would take a core from the QEMUs still
// starting. Then all of them run.
func TestUpStartsEveryNodeBeforeAnyRuns(t *testing.T) {
	t.Parallel()
	hv := fake.New()
	s := testSpec(t, "t", true)
	_, err := Up(context.Background(), hv, s, upOpts())
	require.NoError(t, err)
	lastStart, firstResume := -1, -1
	for i, c := range hv.InOrder() {
		if strings.HasPrefix(c, "StartDomainPaused ") {
			lastStart = i
		}
		if strings.HasPrefix(c, "ResumeDomain ") && firstResume < 0 {
			firstResume = i
		}
	}
	require.GreaterOrEqual(t, lastStart, 0, "no node started")
	assert.Less(t, lastStart, firstResume, "a node ran before the last one started: %v", hv.InOrder())
	for _, n := range s.Nodes {
		o := hv.DomainObjects[s.DomainName(n)]
		assert.True(t, o.Active && !o.Paused, "%s is not running", n.Name)
	}
}

// An up that stopped between its starts and its resumes leaves paused
// nodes; the next up runs them, and says so.
func TestUpResumesNodesLeftPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	hv.FailOn = "ResumeDomain bootlab-t-master-0"
	_, err := Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "node master-0 started paused and did not resume (`bootlab lab up` again resumes it)")
	assert.True(t, hv.DomainObjects["bootlab-t-master-0"].Paused)
	assert.False(t, hv.DomainObjects["bootlab-t-bootstrap"].Paused, "the others run though one did not")
	st, err := Inspect(ctx, hv, s)
	require.NoError(t, err)
	states := map[string]string{}
	for _, n := range st.Nodes {
		states[n.Name] = n.State
	}
	assert.Equal(t, "paused", states["master-0"], "lab status names the paused node")

	hv.Reset()
	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.Equal(t, []string{"ResumeDomain bootlab-t-master-0"}, hv.Mutations())
	assert.False(t, hv.DomainObjects["bootlab-t-master-0"].Paused)
	assert.Contains(t, stepDetails(res), "master-0 resumed (it was paused)")
}

// A node that fails to start does not keep the others paused.
func TestUpRunsTheStartedNodesWhenOneFailsToStart(t *testing.T) {
	t.Parallel()
	hv := fake.New()
	s := testSpec(t, "t", true)
	hv.FailOn = "StartDomainPaused bootlab-t-master-1"
	_, err := Up(context.Background(), hv, s, upOpts())
	require.ErrorContains(t, err, "injected failure")
	for _, n := range s.Nodes {
		o := hv.DomainObjects[s.DomainName(n)]
		if n.Name == "master-1" {
			assert.False(t, o.Active)
			continue
		}
		assert.True(t, o.Active && !o.Paused, "%s is not running", n.Name)
	}
}

// lostAnswers is a hypervisor whose daemon takes the UUID a network or
// pool definition names, as libvirt does; with lose set, a define is done
// and its answer lost, as when the host goes away mid-call.
type lostAnswers struct {
	*fake.Hypervisor
	lose bool
}

func (l *lostAnswers) define(name string, objs map[string]*hypervisor.Object, x string, def func() (*hypervisor.Object, error)) (*hypervisor.Object, error) {
	var v struct {
		UUID string `xml:"uuid"`
	}
	if err := xml.Unmarshal([]byte(x), &v); err != nil {
		return nil, err
	}
	o, err := def()
	if err != nil {
		return nil, err
	}
	if v.UUID != "" { // libvirt makes one up otherwise, as the fake does
		objs[o.Name].UUID, o.UUID = v.UUID, v.UUID
	}
	if l.lose {
		return nil, errors.New("define " + name + ": procedure interrupted while awaiting response")
	}
	return o, nil
}

func (l *lostAnswers) DefineNetwork(ctx context.Context, x string) (*hypervisor.Object, error) {
	return l.define("network", l.NetworkObjects, x, func() (*hypervisor.Object, error) { return l.Hypervisor.DefineNetwork(ctx, x) })
}

func (l *lostAnswers) DefinePool(ctx context.Context, x string) (*hypervisor.Object, error) {
	return l.define("pool", l.PoolObjects, x, func() (*hypervisor.Object, error) { return l.Hypervisor.DefinePool(ctx, x) })
}

// A network or pool whose define was done but whose answer was lost is
// still the lab's: its UUID was recorded before the define, so the next
// up goes on with it instead of refusing it as another's.
func TestUpOwnsWhatALostAnswerDefined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := &lostAnswers{Hypervisor: fake.New(), lose: true}
	s := testSpec(t, "t", true)
	_, err := Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "procedure interrupted")
	require.Contains(t, hv.NetworkObjects, "bootlab-t", "the define was done")

	_, err = Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "define pool: procedure interrupted", "the network is owned; the pool's define loses its answer next")
	hv.lose = false
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err, "the network and pool made before are this lab's")
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, hv.NetworkObjects["bootlab-t"].UUID, st.NetworkUUID)
	assert.Equal(t, hv.PoolObjects["bootlab-t"].UUID, st.PoolUUID)
}
