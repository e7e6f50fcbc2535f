//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRehearsalNodeSurvivesReboot: on a rehearsal lab the learner runs
// stages 01 to 07 and writes a key into etcd; the bootstrap is rebooted
// gracefully (`sudo reboot` in its shell), then reset (`lab reboot
// --hard`, a power cut), then by `lab reboot` from the host. After each boot (a new boot id) stage status
// still shows 01 to 07 done, the kubelet stand-in has started etcd again
// from its manifest on its kept data directory, and etcd answers with the
// key.
func TestRehearsalNodeSurvivesReboot(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology: {masters: 1, workers: 0}\n")
	mustRun(t, "lab", "up", "-f", l.SpecFile, "--manual-bootstrap")
	bootID := waitBootstrapSSH(t, l, "")

	mustRun(t, "stage", "run", "-f", l.SpecFile, "07")
	etcdHealthy(t, l)
	mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", etcdctlOnNode+"put bootlab-e2e-reboot kept-on-disk")

	// Graceful: what a learner types.
	r := run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo reboot")
	assert.Contains(t, r.Stderr, "bootlab rehearsal stand-in", "the stand-in says what it is:\n%s", r)
	bootID = waitBootstrapSSH(t, l, bootID)
	assertSurvived(t, l, "after a graceful reboot")
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "grep -c ' /var ext4 ' /proc/mounts")
	assert.Equal(t, "1", strings.TrimSpace(r.Stdout), "/var is the node disk's:\n%s", r)

	// Hard: a power reset, nothing synced but what the kernel wrote.
	mustRun(t, "lab", "reboot", "-f", l.SpecFile, "bootstrap", "--hard")
	bootID = waitBootstrapSSH(t, l, bootID)
	assertSurvived(t, l, "after a power reset")

	// The trainer's graceful reboot, then at once what docs/rehearsal-lab.md
	// runs next: lab reboot returns once the node is down, and stage
	// status waits for its next boot to answer.
	mustRun(t, "lab", "reboot", "-f", l.SpecFile, "bootstrap")
	assertSurvived(t, l, "after lab reboot")
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "cat /proc/sys/kernel/random/boot_id")
	assert.NotEqual(t, bootID, strings.TrimSpace(r.Stdout), "lab reboot rebooted the node")

	r = run(t, "lab", "reboot", "-f", l.SpecFile, "no-such-node")
	assert.Equal(t, 2, r.Code, "an unknown node is a usage error:\n%s", r)
	assert.Contains(t, r.Stderr, `no node "no-such-node"`)
	assert.Contains(t, r.Stderr, "bootstrap, master-0", "it names the lab's nodes")
}

// waitBootstrapSSH waits for the bootstrap to answer over SSH with a boot
// id other than prev (a boot after prev's) and returns it.
func waitBootstrapSSH(t *testing.T, l labEnv, prev string) string {
	t.Helper()
	deadline := time.Now().Add(6 * time.Minute)
	for {
		r := run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "cat /proc/sys/kernel/random/boot_id")
		if id := strings.TrimSpace(r.Stdout); r.Code == 0 && id != "" && id != prev {
			return id
		}
		require.False(t, time.Now().After(deadline), "the bootstrap never answered over SSH with a new boot id (was %q):\n%s", prev, r)
		time.Sleep(3 * time.Second)
	}
}

// assertSurvived checks what the bootstrap kept: stages 01 to 07 done,
// etcd running again with the key written before.
func assertSurvived(t *testing.T, l labEnv, when string) {
	t.Helper()
	r := mustRun(t, "stage", "status", "-f", l.SpecFile, "-o", "json")
	var st struct {
		Stages []struct {
			Number int    `json:"number"`
			State  string `json:"state"`
		} `json:"stages"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st), r.Stdout)
	require.Len(t, st.Stages, 15)
	for _, s := range st.Stages[:7] {
		assert.Contains(t, []string{"done", "always"}, s.State, "stage %02d %s", s.Number, when)
	}
	etcdHealthy(t, l)
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", etcdctlOnNode+"get --print-value-only bootlab-e2e-reboot")
	assert.Equal(t, "kept-on-disk", strings.TrimSpace(r.Stdout), "etcd kept the key %s", when)
}
