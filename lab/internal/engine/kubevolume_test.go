package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/release"
)

// rehearsalWithKubeVolume is a rehearsal lab whose boot files and
// Kubernetes volume (a qcow2 header, 136 MiB virtual) are in a "cache"
// outside the lab's directories.
func rehearsalWithKubeVolume(t *testing.T) (*spec.Spec, string) {
	t.Helper()
	s := testSpec(t, "reh", false)
	cache := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(cache, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	hdr := make([]byte, 8192)
	copy(hdr, "QFI\xfb")
	hdr[24+4] = 0x08 // virtual size 136 MiB, big endian
	hdr[24+5] = 0x80
	s.Profile, s.OpenShift.ManualBootstrap = spec.ProfileProbe, true
	s.Image = spec.Image{Kernel: write("vmlinuz", []byte("kernel")), Initrd: write("initramfs.img", []byte("initrd")),
		RehearsalInitrd: write("rehearsal.img", []byte("rehearsal initrd")), KubeVolume: write("kubernetes-v1.qcow2", hdr)}
	return s, s.Image.KubeVolume
}

// up uploads the Kubernetes volume once into the lab's pool, records it
// in the state, and attaches it read-only to the bootstrap and masters;
// a second up sends nothing; down deletes the pool's copy and leaves the
// cached file it came from.
func TestUpUploadsTheKubeVolumeOnceAndDownRemovesOnlyThePoolCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s, cached := rehearsalWithKubeVolume(t)
	require.NoError(t, claimLabDir(s, ""))

	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	boot, err := ReadBootFiles(s)
	require.NoError(t, err)
	require.NotNil(t, boot.KubeVolume)
	assert.Equal(t, uint64(136<<20), boot.KubeVolume.VirtualSize)
	name := plan.BootVolumePrefix + "kube-" + boot.KubeVolume.Digest + ".qcow2"
	assert.Equal(t, 1, countPrefix(hv.Mutations(), "UploadVolume bootlab-reh/"+name))
	assert.Equal(t, int64(8192), hv.Uploaded[name])
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.True(t, st.BootVolumes[name], "the upload is recorded complete")

	for _, n := range s.Nodes {
		x := hv.DomainObjects[s.DomainName(n)].XML
		has := strings.Contains(x, "<volume>"+name+"</volume>") || strings.Contains(x, `volume="`+name+`"`)
		assert.Equal(t, n.Role != spec.RoleWorker, has, "%s: the volume goes to the bootstrap and masters", n.Name)
		if has {
			assert.Contains(t, x, "<readonly>", n.Name)
		}
	}

	hv.Reset()
	_, err = Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	assert.Zero(t, countPrefix(hv.Mutations(), "UploadVolume"), "a second up sends nothing")

	hv.Reset()
	_, err = Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	assert.Contains(t, hv.Mutations(), "DeleteVolume bootlab-reh/"+name)
	_, err = os.Stat(cached)
	assert.NoError(t, err, "the cache's volume stays: other labs share it")
}

// A Kubernetes volume that is not a qcow2 image is refused by name before
// anything is made.
func TestKubeVolumeMustBeQcow2(t *testing.T) {
	t.Parallel()
	s, _ := rehearsalWithKubeVolume(t)
	s.Image.KubeVolume = s.Image.Kernel
	_, err := ReadBootFiles(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "image.kubeVolume")
	assert.Contains(t, err.Error(), "not a qcow2 image")
}

// The dry run of a rehearsal lab says whether `up` would build the
// Kubernetes volume (the slow part of a first lab) or find it cached; a
// plain probe lab plans none.
func TestPlanPrepareNamesTheKubeVolume(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_CACHE) changes the whole process's environment.
	cache := t.TempDir()
	t.Setenv("BOOTLAB_CACHE", cache)
	s, _ := rehearsalWithKubeVolume(t)
	s.Image.KubeVolume = ""
	kinds := func(cs []Change) map[string]Change {
		out := map[string]Change{}
		for _, c := range cs {
			out[c.Kind] = c
		}
		return out
	}
	c, ok := kinds(planPrepare(s))["kubeVolume"]
	require.True(t, ok)
	assert.Equal(t, "build", c.Action)
	assert.Contains(t, c.Detail, "about 8 min")
	assert.Contains(t, c.Detail, "(no checksums pinned in lab/release/checksums.txt to download them)")

	rel, err := release.For(OpenShiftVersion(s))
	require.NoError(t, err)
	kc, err := gobuild.Kubernetes(rel.Kubernetes)
	require.NoError(t, err)
	bin := filepath.Join(kc.Dir(cache), kc.Programs[0])
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.WriteFile(bin, []byte("hyperkube"), 0o755))
	c2 := kinds(planPrepare(s))["kubeVolume"]
	assert.Equal(t, "build", c2.Action)
	assert.Contains(t, c2.Detail, "from the cached Kubernetes binaries")

	p, cached := probe.KubeVolumeCached(cache, OpenShiftVersion(s))
	require.False(t, cached)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("volume"), 0o644))
	c = kinds(planPrepare(s))["kubeVolume"]
	assert.Equal(t, Change{Action: "check", Kind: "kubeVolume", Name: p, Detail: c.Detail}, c)
	assert.Contains(t, c.Detail, "cached")

	s.OpenShift.ManualBootstrap = false
	assert.NotContains(t, kinds(planPrepare(s)), "kubeVolume")
}
