//go:build integration

package probe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/release"
)

// debugfs reads an ext4 image without mounting it (no root, no loop).
func debugfs(t *testing.T, img, cmd string) string {
	t.Helper()
	tool, err := findTool("debugfs", "apt-get install -y e2fsprogs")
	require.NoError(t, err)
	out, err := exec.Command(tool, "-R", cmd, img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// The volume is a compressed qcow2 whose ext4 file system holds the
// binary, byte for byte, and a link per program, under the label the agent
// looks for. The cache is primed with a stand-in binary where lab/gobuild
// keeps hyperkube, so no Kubernetes is built: the second call reuses the
// volume, and KubeVolumeCached finds it without running anything.
func TestEnsureKubeVolumeCarriesHyperkubeAndLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cache := t.TempDir()
	rel, err := release.For("4.19")
	require.NoError(t, err)
	c, err := gobuild.Kubernetes(rel.Kubernetes)
	require.NoError(t, err)
	_, cached := KubeVolumeCached(cache, "4.19")
	assert.False(t, cached, "an empty cache has no volume")

	bin := filepath.Join(c.Dir(cache), "hyperkube")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	content := []byte(strings.Repeat("hyperkube stand-in\n", 100000)) // 1.9 MB
	require.NoError(t, os.WriteFile(bin, content, 0o755))

	v, err := EnsureKubeVolume(ctx, cache, "4.19.3", nil)
	require.NoError(t, err)
	assert.True(t, v.Built)
	assert.False(t, v.Binaries.Fetched, "the primed binary is used, not built")
	assert.Equal(t, "1.32.13", v.Kubernetes)
	assert.Equal(t, "4.19", v.OpenShift)
	p, cached := KubeVolumeCached(cache, "4.19")
	assert.True(t, cached)
	assert.Equal(t, v.Path, p)

	qi, err := findTool("qemu-img", "apt-get install -y qemu-utils")
	require.NoError(t, err)
	info, err := exec.Command(qi, "info", v.Path).CombinedOutput()
	require.NoError(t, err, "%s", info)
	assert.Contains(t, string(info), "file format: qcow2")
	fi, err := os.Stat(v.Path)
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(len(content))/2, "the qcow2 is compressed")

	raw := filepath.Join(t.TempDir(), "kube.img")
	out, err := exec.Command(qi, "convert", "-O", "raw", v.Path, raw).CombinedOutput()
	require.NoError(t, err, "%s", out)
	dumpe2fs, err := findTool("dumpe2fs", "apt-get install -y e2fsprogs")
	require.NoError(t, err)
	hdr, err := exec.Command(dumpe2fs, "-h", raw).CombinedOutput()
	require.NoError(t, err, "%s", hdr)
	assert.Regexp(t, `Filesystem volume name:\s+`+KubeVolumeLabel, string(hdr))

	dumped := filepath.Join(t.TempDir(), "hyperkube")
	debugfs(t, raw, "dump /bin/hyperkube "+dumped)
	got, err := os.ReadFile(dumped)
	require.NoError(t, err)
	assert.Equal(t, content, got)
	for _, prog := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		assert.Contains(t, debugfs(t, raw, "stat /bin/"+prog), `Fast link dest: "hyperkube"`, prog)
	}
	st := debugfs(t, raw, "stat /bin/hyperkube")
	assert.Regexp(t, `Mode:\s+0755`, st, "executable")
	assert.Regexp(t, `User:\s+0\s+Group:\s+0`, st, "root's")

	again, err := EnsureKubeVolume(ctx, cache, "4.19", nil)
	require.NoError(t, err)
	assert.False(t, again.Built)
	assert.Equal(t, v.Path, again.Path)
}
