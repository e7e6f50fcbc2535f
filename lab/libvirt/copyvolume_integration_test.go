//go:build integration

package libvirt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the host's own daemon: a volume uploaded into one pool is copied
// into another by the host (virStorageVolCreateXMLFrom), byte for byte,
// as a class's second lab on a host takes the first one's boot files.
func TestIntegrationCopyVolumeBetweenPools(t *testing.T) {
	ctx := context.Background()
	c, err := Connect(ctx, "qemu:///system", nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	pool := func(name string) string {
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o755))
		_, err := c.DefinePool(ctx, fmt.Sprintf(`<pool type="dir"><name>%s</name><target><path>%s</path></target></pool>`, name, dir))
		require.NoError(t, err)
		require.NoError(t, c.StartPool(ctx, name))
		t.Cleanup(func() {
			vols, _ := c.Volumes(ctx, name)
			for _, v := range vols {
				_ = c.DeleteVolume(ctx, name, v.Name)
			}
			_ = c.DestroyPool(ctx, name)
			_ = c.UndefinePool(ctx, name)
		})
		return dir
	}
	fromPool, toPool := "bootlab-test-copy-a-"+suffix, "bootlab-test-copy-b-"+suffix
	pool(fromPool)
	toDir := pool(toPool)

	content := bytes.Repeat([]byte("kernel "), 150000) // about 1 MiB
	vol := fmt.Sprintf(`<volume><name>boot-kernel-x</name><capacity unit="bytes">%d</capacity><target><format type="raw"/></target></volume>`, len(content))
	_, err = c.CreateVolume(ctx, fromPool, vol)
	require.NoError(t, err)
	require.NoError(t, c.UploadVolume(ctx, fromPool, "boot-kernel-x", bytes.NewReader(content), int64(len(content))))

	got, err := c.CopyVolume(ctx, toPool, vol, fromPool, "boot-kernel-x")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(toDir, "boot-kernel-x"), got.Path)
	data, err := os.ReadFile(got.Path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(content, data), "the copy holds the uploaded bytes (%d of %d)", len(data), len(content))

	_, err = c.CopyVolume(ctx, toPool, vol, fromPool, "no-such-volume")
	assert.ErrorContains(t, err, "no-such-volume", "a missing source is named")
}
