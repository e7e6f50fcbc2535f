//go:build e2e

package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/probe"
)

// TestBootFilesFromThePool: the kernel, initrd and Ignition a probe lab's
// VMs boot from are volumes of the lab's pool (what makes a remote
// hypervisor possible), the nodes boot and verify from them, a second `up`
// uploads nothing, and `down` removes them with the pool.
func TestBootFilesFromThePool(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 1\n  workers: 0\n")
	r := mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Regexp(t, `Uploading \d+ boot files`, r.Stdout+r.Stderr)
	v, vr := verifyJSON(t, l, "4m")
	require.Equal(t, 0, vr.Code, "verify failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), vr.Stderr)

	s := loadSpec(t, l)
	cache := probe.DefaultCacheDir()
	paths := regexp.MustCompile(`<kernel>([^<]+)</kernel>|<initrd>([^<]+)</initrd>|file=['"]([^'"]+)['"]`)
	for _, n := range s.Nodes {
		x, err := virsh(t, "dumpxml", s.DomainName(n))
		require.NoError(t, err)
		found := 0
		for _, m := range paths.FindAllStringSubmatch(x, -1) {
			p := m[1] + m[2] + m[3]
			if strings.HasSuffix(p, ".log") {
				continue // the console log, written by virtlogd
			}
			// Disks, their backing base image and the boot files: all in the pool.
			assert.True(t, strings.HasPrefix(p, s.Storage.PoolDir+"/"), "%s: %s is not in the pool", n.Name, p)
			assert.False(t, strings.HasPrefix(p, s.LabDir) || strings.HasPrefix(p, cache), "%s names a workstation path %s", n.Name, p)
			if strings.HasPrefix(p, s.Storage.PoolDir+"/boot-") {
				found++
			}
		}
		assert.Equal(t, 3, found, "%s: kernel, initrd and Ignition", n.Name)
	}
	vols, err := virsh(t, "vol-list", "--pool", s.PoolName())
	require.NoError(t, err)
	assert.Contains(t, vols, "boot-kernel-")

	r = mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.NotContains(t, r.Stdout+r.Stderr, "uploaded", "a second up uploads nothing")

	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
}
