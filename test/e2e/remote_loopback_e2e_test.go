//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
)

// TestRemoteURIOnLoopback builds a probe lab through qemu+ssh to this
// machine's own sshd: libvirt, the boot file uploads, haproxy, console
// logs and preflight all go through bootlab's SSH connection, and the lab
// verifies green. (The lab network is on this machine, so verify reaches it
// directly: the separate-host test is the namespace e2e.)
func TestRemoteURIOnLoopback(t *testing.T) {
	parallel(t)
	port, key := sshctest.OpenSSHD(t)
	kh := sshctest.KnownHosts(t)
	uri := fmt.Sprintf("qemu+ssh://root@127.0.0.1:%d/system?keyfile=%s&known_hosts=%s", port, key, kh)
	hostDir := filepath.Join(e2eRoot, "remote-host-"+filepath.Base(t.TempDir()))
	l := newLabWith(t, fmt.Sprintf("topology:\n  masters: 1\n  workers: 0\nlibvirt:\n  uri: %q\n  hostDir: %s\n", uri, hostDir))
	t.Cleanup(func() { os.RemoveAll(hostDir) })

	r := mustRun(t, "lab", "preflight", "-f", l.SpecFile)
	assert.Contains(t, r.Stdout, fmt.Sprintf("[on root@127.0.0.1:%d]", port), "each check names the host")

	r = mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Contains(t, r.Stdout+r.Stderr, fmt.Sprintf("on root@127.0.0.1:%d", port), "haproxy starts on the hypervisor's machine")
	kd, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(kd), "\n"), "one host key recorded")

	v, vr := verifyJSON(t, l, "4m")
	require.Equal(t, 0, vr.Code, "verify failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), vr.Stderr)

	s := loadSpec(t, l)
	_, err = os.Stat(filepath.Join(hostDir, "haproxy", "haproxy.cfg"))
	assert.NoError(t, err, "haproxy's config is in libvirt.hostDir")
	_, err = os.Stat(filepath.Join(s.LabDir, "haproxy"))
	assert.True(t, os.IsNotExist(err), "not in the lab directory")
	r = mustRun(t, "lab", "console", "-f", l.SpecFile, "--no-follow", "--raw", "master-0")
	assert.NotEmpty(t, r.Stdout, "the console log is read over SSH")
	r = mustRun(t, "lab", "status", "-f", l.SpecFile, "-o", "json")
	assert.Contains(t, r.Stdout, `"running": true`, "status finds haproxy on the hypervisor")

	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
	_, err = os.Stat(hostDir)
	assert.True(t, os.IsNotExist(err), "down removes libvirt.hostDir")
}
