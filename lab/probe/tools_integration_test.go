//go:build integration

package probe

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/upstream"
)

// EnsureTools downloads the real Debian packages and builds the release's
// etcd, and the archive it builds is a working root: unpacked and entered
// with chroot, its bash, coreutils, jq, etcd and etcdctl run with only the
// libraries it carries. A second call reuses the downloads, the etcd
// binary and the archive; another release's etcd makes another archive.
func TestEnsureToolsRunsInAChroot(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"apt-get", "dpkg-deb", "cpio", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: apt-get install -y dpkg cpio coreutils", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("chroot needs root: run the integration tests as root (make test-integration)")
	}
	ctx := context.Background()
	cache := t.TempDir()
	pins, err := release.For("4.19.10")
	require.NoError(t, err)
	tools, err := EnsureTools(ctx, cache, "4.19.10", nil)
	require.NoError(t, err)
	for _, f := range []string{"usr/bin/bash", "usr/bin/stat", "usr/bin/jq", "usr/bin/etcd", "usr/bin/etcdctl", "usr/bin/sed", "usr/bin/grep", "usr/bin/curl",
		"lib/x86_64-linux-gnu/libjq.so.1", "lib/x86_64-linux-gnu/libonig.so.5", "lib64/ld-linux-x86-64.so.2"} {
		assert.Contains(t, tools.Files, f)
	}
	fi, err := os.Stat(tools.Archive)
	require.NoError(t, err)
	t.Logf("tools archive %s: %d bytes, %d files", tools.Archive, fi.Size(), len(tools.Files))

	root := t.TempDir()
	gz, err := os.ReadFile(tools.Archive)
	require.NoError(t, err)
	// The archive is unpacked over the probe initramfs, which has etc and lib.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "lib"), 0o755))
	unpack := exec.Command("sh", "-c", "gzip -dc | cpio -i -d --quiet")
	unpack.Dir, unpack.Stdin = root, bytes.NewReader(gz)
	out, err := unpack.CombinedOutput()
	require.NoError(t, err, "%s", out)
	run := exec.Command("chroot", root, "/bin/bash", "-c",
		`set -e; stat -c %a /etc/passwd; echo '{"a":[1,2]}' | jq -c .a; etcd --version | head -1; etcdctl version | head -1; echo x | sed s/x/y/ | grep -c y; id -un; curl --version | head -1 | cut -d' ' -f1; `+
			// what the agent runs on a rehearsal node's first boot (internal/agent/nodedisk.go);
			// the node has /proc for its mtab, this chroot none
			`export EXT2FS_NO_MTAB_OK=1; truncate -s 64M /root/disk; mke2fs -q -t ext4 -L bootlab-node -E lazy_itable_init=1,lazy_journal_init=1,nodiscard /root/disk; tune2fs -l /root/disk | sed -n 's/^Filesystem volume name: *//p'`)
	run.Env = []string{"PATH=/usr/bin"}
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	v := tools.Etcd.Version // the module built here; the shipped one where downloaded
	if tools.Etcd.Source == upstream.Build {
		assert.Equal(t, pins.Etcd.Module, v)
	}
	assert.Equal(t, "644\n[1,2]\netcd Version: "+v+"\netcdctl version: "+v+"\n1\nroot\ncurl\nbootlab-node\n", string(out))

	again, err := EnsureTools(ctx, cache, "4.19.10", nil)
	require.NoError(t, err)
	assert.Equal(t, tools.Archive, again.Archive)
	assert.False(t, again.Etcd.Fetched)
	assert.Equal(t, tools.Etcd.ID, again.Etcd.ID)
	assert.Contains(t, tools.Files, "usr/bin/etcd")

	_, err = EnsureTools(ctx, cache, "4.12.0", nil)
	assert.ErrorContains(t, err, "4.16 through 4.22", "a release without pins is named")
}
