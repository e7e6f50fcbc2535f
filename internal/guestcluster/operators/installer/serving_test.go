package installer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The new revision serves only once every kube-apiserver process on the
// node runs with its --etcd-servers: the previous revision's process,
// still answering /readyz until the kubelet stand-in stops it, does not
// count.
func TestServingRevision(t *testing.T) {
	dir := t.TempDir()
	old := procDir
	procDir = dir
	t.Cleanup(func() { procDir = old })
	proc := func(pid string, args ...string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, pid), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, pid, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644))
	}
	rev1 := []string{"https://10.0.0.10:2379", "https://10.0.0.11:2379", "https://localhost:2379"}
	rev2 := []string{"https://10.0.0.11:2379", "https://localhost:2379"}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "self"), 0o755))
	proc("7", "/sbin/init")
	assert.False(t, servingRevision(rev1), "no kube-apiserver runs")

	proc("100", "/usr/bin/kube-apiserver", "--bind-address=0.0.0.0", "--etcd-servers="+strings.Join(rev1, ","), "--v=2")
	assert.True(t, servingRevision(rev1))
	assert.False(t, servingRevision(rev2), "revision 1's process still serves")

	require.NoError(t, os.RemoveAll(filepath.Join(dir, "100")))
	proc("200", "hyperkube", "kube-apiserver", "--etcd-servers="+strings.Join(rev2, ","))
	assert.True(t, servingRevision(rev2), "revision 2's process, as hyperkube runs it")
}
