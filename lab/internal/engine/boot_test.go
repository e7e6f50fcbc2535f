package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// bootSpec is testSpec with a kernel, an initrd and an Ignition file per
// node on disk.
func bootSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s := testSpec(t, "t", false)
	dir := t.TempDir()
	s.Image.Kernel = filepath.Join(dir, "vmlinuz")
	s.Image.Initrd = filepath.Join(dir, "initrd.img")
	require.NoError(t, os.WriteFile(s.Image.Kernel, []byte("kernel v1"), 0o644))
	require.NoError(t, os.WriteFile(s.Image.Initrd, []byte("initrd v1"), 0o644))
	for _, n := range s.Nodes {
		require.NoError(t, os.MkdirAll(filepath.Dir(labdir.Ignition(s, n)), 0o755))
		require.NoError(t, os.WriteFile(labdir.Ignition(s, n), []byte(`{"ignition":{"version":"3.2.0"},"node":"`+n.Name+`"}`), 0o600))
	}
	return s
}

func countCalls(calls []string, prefix string) int { return countPrefix(calls, prefix) }

// The files the VMs read are uploaded into the pool once: a second up
// finds every volume (its name carries the digest) and sends nothing.
func TestUpUploadsBootFilesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	want := 2 + len(s.Nodes) // kernel, initrd, one Ignition per node
	assert.Equal(t, want, countCalls(hv.Mutations(), "UploadVolume bootlab-t/boot-"))
	assert.Len(t, hv.Uploaded, want)
	boot, err := ReadBootFiles(s)
	require.NoError(t, err)
	for _, n := range s.Nodes {
		x := hv.DomainObjects[s.DomainName(n)].XML
		assert.Contains(t, x, "<kernel>"+filepath.Join(s.Storage.PoolDir, "boot-kernel-"+boot.Kernel.Digest)+"</kernel>")
		assert.Contains(t, x, `file="`+filepath.Join(s.Storage.PoolDir, "boot-"+n.Name+"-"+boot.Ignition[n.Name].Digest+".ign")+`"`)
		assert.NotContains(t, x, labdir.Ignition(s, n))
		assert.Equal(t, int64(len("kernel v1")), hv.Uploaded["boot-kernel-"+boot.Kernel.Digest])
	}

	hv.Reset()
	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations(), "nothing uploaded, nothing changed")
	assert.False(t, res.Changed)
}

// An upload cut short leaves a volume that is not recorded complete: the
// next up deletes and uploads it again.
func TestUpRedoesAnInterruptedBootUpload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	boot, err := ReadBootFiles(s)
	require.NoError(t, err)
	kernel := "bootlab-t/boot-kernel-" + boot.Kernel.Digest
	hv.FailOn = "UploadVolume " + kernel
	_, err = Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "injected failure")
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.Contains(t, calls, "DeleteVolume "+kernel)
	assert.Contains(t, calls, "CreateVolume "+kernel)
	assert.Contains(t, calls, "UploadVolume "+kernel)
	assert.Equal(t, 0, countCalls(calls, "UploadVolume bootlab-t/boot-initrd"), "the initrd was complete")
}

// A changed kernel is a new volume; the old one goes once the domains name
// the new one, and down deletes what is left with the pool.
func TestUpReplacesAChangedKernel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	old, err := ReadBootFiles(s)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Image.Kernel, []byte("kernel v2"), 0o644))
	now, err := ReadBootFiles(s)
	require.NoError(t, err)
	hv.Reset()
	res, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.Equal(t, 1, countCalls(calls, "UploadVolume "), calls)
	assert.Contains(t, calls, "UploadVolume bootlab-t/boot-kernel-"+now.Kernel.Digest)
	assert.Contains(t, calls, "DeleteVolume bootlab-t/boot-kernel-"+old.Kernel.Digest)
	assert.Contains(t, stepDetails(res), "1 old boot files removed")
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.False(t, st.BootVolumes["boot-kernel-"+old.Kernel.Digest])
	assert.True(t, st.BootVolumes["boot-kernel-"+now.Kernel.Digest])

	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Empty(t, hv.PoolVolumes[s.PoolName()], "down deletes the boot volumes with the pool")
}

// A missing kernel is named by its field before anything is created.
func TestUpNamesAMissingKernel(t *testing.T) {
	t.Parallel()
	hv := fake.New()
	s := bootSpec(t)
	s.Image.Kernel = filepath.Join(t.TempDir(), "gone")
	_, err := Up(context.Background(), hv, s, upOpts())
	require.ErrorContains(t, err, "image.kernel")
	assert.Empty(t, hv.Mutations())
}

// qemu reads the Ignition volumes as its own user, found on the hypervisor.
func TestUpGivesIgnitionVolumesToTheQEMUUser(t *testing.T) {
	t.Parallel()
	hv := fake.New()
	hv.Machine.Respond = func(cmd string, stdout io.Writer) int {
		if strings.Contains(cmd, "libvirt-qemu") {
			_, _ = io.WriteString(stdout, "64055 108\n")
			return 0
		}
		return 1
	}
	s := bootSpec(t)
	_, err := Up(context.Background(), hv, s, upOpts())
	require.NoError(t, err)
	boot, err := ReadBootFiles(s)
	require.NoError(t, err)
	ign := hv.VolumeXML["boot-bootstrap-"+boot.Ignition["bootstrap"].Digest+".ign"]
	assert.Contains(t, ign, "<owner>64055</owner>")
	assert.Contains(t, ign, "<mode>0600</mode>")
	assert.NotContains(t, hv.VolumeXML["boot-kernel-"+boot.Kernel.Digest], "<owner>", "the kernel is readable by all")
}

// `up --dry-run` plans the boot volumes like the rest, and a changed
// kernel as one upload and one removal, changing nothing.
func TestUpDryRunPlansBootFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	opts := upOpts()
	opts.DryRun = true
	res, err := Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations())
	var lines []string
	for _, c := range res.Changes {
		lines = append(lines, c.String())
	}
	plan := strings.Join(lines, "\n")
	assert.Equal(t, 2+len(s.Nodes), strings.Count(plan, "upload"), plan)

	opts.DryRun = false
	_, err = Up(ctx, hv, s, opts)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Image.Kernel, []byte("kernel v2"), 0o644))
	opts.DryRun = true
	hv.Reset()
	res, err = Up(ctx, hv, s, opts)
	require.NoError(t, err)
	assert.Empty(t, hv.Mutations())
	lines = nil
	for _, c := range res.Changes {
		lines = append(lines, c.String())
	}
	plan = strings.Join(lines, "\n")
	assert.Equal(t, 1, strings.Count(plan, "upload"), plan)
	assert.Contains(t, plan, "boot-kernel-")
	assert.Regexp(t, `remove\s+volume\s+bootlab-t/boot-kernel-`, plan)
}

// While the lab has a checkpoint, whose domain definitions name the boot
// files of their day, old boot files are kept.
func TestUpKeepsOldBootFilesWhileCheckpointsNameThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	old, err := ReadBootFiles(s)
	require.NoError(t, err)
	require.NoError(t, hv.CreateSnapshot(ctx, s.DomainName(s.Nodes[0]), `<domainsnapshot><name>cp1</name></domainsnapshot>`))
	require.NoError(t, os.WriteFile(s.Image.Kernel, []byte("kernel v2"), 0o644))
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.NotContains(t, hv.Mutations(), "DeleteVolume bootlab-t/boot-kernel-"+old.Kernel.Digest)
	assert.Contains(t, hv.PoolVolumes[s.PoolName()], "boot-kernel-"+old.Kernel.Digest)
}

// A volume deleted by hand is uploaded again, and only an upload that
// ended records it complete: one cut short this time is redone next time.
func TestUpDoesNotTrustARecordOfADeletedVolume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := bootSpec(t)
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	boot, err := ReadBootFiles(s)
	require.NoError(t, err)
	kernel := "boot-kernel-" + boot.Kernel.Digest
	require.NoError(t, hv.DeleteVolume(ctx, s.PoolName(), kernel)) // by hand
	hv.Reset()
	hv.FailOn = "UploadVolume bootlab-t/" + kernel
	_, err = Up(ctx, hv, s, upOpts())
	require.ErrorContains(t, err, "injected failure")
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.False(t, st.BootVolumes[kernel], "no record for a volume whose upload failed")
	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.Contains(t, hv.Mutations(), "UploadVolume bootlab-t/"+kernel)
}
