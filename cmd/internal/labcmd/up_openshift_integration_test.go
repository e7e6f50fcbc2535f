//go:build integration

package labcmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/labdir"
)

// `lab up` of an openshift-profile lab on a real libvirtd (test:///default)
// with the openshift-install test double: the Ignition is made before any
// domain, the bootstrap and masters run while the workers are defined but
// off, and the host DNS set up through systemd-resolved (a recording
// stand-in of resolvectl on PATH) is recorded in the state; `lab down`
// reverts it.
func TestUpOpenShiftDefersWorkersAndRecordsHostDNS(t *testing.T) {
	if _, err := os.Stat("/var/run/libvirt/libvirt-sock"); err != nil {
		t.Fatalf("libvirtd is not running: `mkdir -p /run/libvirt; virtlogd -d; libvirtd -d`: %v", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("ip is missing: apt-get install -y iproute2")
	}
	s, dir := fakeLab(t)
	s.Name = "ocpup-it"
	s.Libvirt.URI = "test:///default"
	s.Network = spec.Network{CIDR: "10.217.43.0/24", Mode: spec.NetworkIsolated}
	s.Storage.PoolDir = filepath.Join(dir, "pool")
	s.Topology = spec.Topology{Masters: 3, Workers: 2}
	s.Nodes = nil
	s.Defaults()
	// The test driver's pool is small: tiny disks and a real (tiny) qcow2,
	// below the spec floors, hence upSpec/downSpec rather than -f.
	for i := range s.Nodes {
		s.Nodes[i].DiskGiB = 1
	}
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Fatalf("qemu-img is missing: apt-get install -y qemu-utils")
	}
	s.Image.Path = filepath.Join(dir, "rhcos.qcow2")
	out, err := exec.Command("qemu-img", "create", "-f", "qcow2", s.Image.Path, "64M").CombinedOutput()
	require.NoError(t, err, string(out))

	// systemd-resolved stand-in: answers status, records every call.
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	resolvectlLog := filepath.Join(dir, "resolvectl.log")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "resolvectl"), []byte("#!/bin/sh\n# TEST DOUBLE of resolvectl\necho \"$*\" >>"+resolvectlLog+"\n"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	// The lab bridge, which test:///default does not make: a bridge of
	// that name, so Undo sees the link and reverts it.
	out, err = exec.Command("ip", "link", "add", s.Network.Bridge, "type", "bridge").CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", s.Network.Bridge).Run() })
	installerLog := filepath.Join(dir, "installer.log")
	t.Setenv("FAKE_INSTALLER_LOG", installerLog)

	ctx := context.Background()
	var errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &errOut}, Status: status.New(&errOut, false)}
	require.NoError(t, upSpec(ctx, f, &UpOptions{NoPreflight: true}, s), errOut.String())
	t.Cleanup(func() { _ = downSpec(ctx, f, &DownOptions{}, s) })

	calls, err := os.ReadFile(installerLog)
	require.NoError(t, err)
	assert.Contains(t, string(calls), "create ignition-configs --dir "+labdir.Assets(s))
	for _, n := range s.Nodes {
		fi, err := os.Stat(labdir.Ignition(s, n))
		require.NoError(t, err, n.Name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), n.Name)
	}

	// Each test:///default connection starts empty, so what up did is read
	// from its own report: the Ignition exists before any libvirt object,
	// the bootstrap and masters are started, the workers only defined.
	log := errOut.String()
	ign, netAt := strings.Index(log, "Writing Ignition for 6 nodes"), strings.Index(log, "Creating network bootlab-ocpup-it")
	require.True(t, ign >= 0 && netAt >= 0, log)
	assert.Less(t, ign, netAt, "the Ignition is made before the lab")
	assert.Contains(t, log, "bootstrap defined, bootstrap started, master-0 defined, master-0 started, master-1 defined, master-1 started, master-2 defined, master-2 started, worker-0 defined, worker-1 defined (", "on the step's own line")
	assert.NotContains(t, log, "worker-0 started")
	assert.Contains(t, errOut.String(), "2 worker(s) defined but off")

	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, "resolved:"+s.Network.Bridge, st.HostDNS.String())
	got, err := os.ReadFile(resolvectlLog)
	require.NoError(t, err)
	assert.Contains(t, string(got), "dns "+s.Network.Bridge+" "+s.Network.Gateway+"\n")
	assert.Contains(t, string(got), "domain "+s.Network.Bridge+" ~ocp.lab.local\n")
	assert.NotContains(t, string(got), "revert")

	require.NoError(t, downSpec(ctx, f, &DownOptions{}, s), errOut.String())
	got, err = os.ReadFile(resolvectlLog)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	assert.Equal(t, "revert "+s.Network.Bridge, lines[len(lines)-1], "lab down reverts the per-link DNS")
	_, err = labdir.LoadState(s.LabDir)
	assert.ErrorIs(t, err, labdir.ErrNoState)
	assert.NoFileExists(t, labdir.InstallConfigCopy(s), "the kept install-config holds the pull secret")
	assert.NoDirExists(t, s.LabDir, "nothing of the lab is left")
}
