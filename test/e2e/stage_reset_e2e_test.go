//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
)

// etcdctlOnNode is etcdctl as root on the rehearsal bootstrap, with the
// client certificates stage 07 renders.
const etcdctlOnNode = "sudo -n etcdctl --cacert=/opt/openshift/tls/etcd-ca-bundle.crt --cert=/opt/openshift/tls/etcd-client.crt --key=/opt/openshift/tls/etcd-client.key --endpoints=https://localhost:2379 "

// stageResetRoundTrip is part of rehearseLab (TestClass), on its lab once stages
// 01 to 06 have run: `stage run 07` checkpoints the bootstrap as
// before-07 and starts real etcd (the kubelet stand-in runs the member
// pod); `stage reset 07` puts the node back: etcd's process and port are
// gone, 07's marker is absent and 06's present, the lab's stage records
// are as before; `stage run 07` then succeeds again. It logs the
// checkpoint and reset times and the overlay's cost (BENCH line).
func stageResetRoundTrip(t *testing.T, l labEnv) {
	s := loadSpec(t, l)
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	bs, _ := st.Spec.Node("bootstrap")
	saved := regexp.MustCompile(`checkpoint before-07 saved \((\d+\.\d) s\)`)
	recordsFile := filepath.Join(labdir.Stages(s), stages.RecordsFile)
	recordsBefore, err := os.ReadFile(recordsFile)
	require.NoError(t, err)

	r := mustRun(t, "stage", "run", "-f", l.SpecFile, "07")
	m := saved.FindStringSubmatch(r.Stderr)
	require.NotNil(t, m, "stage run 07 says it saved before-07:\n%s", r.Stderr)
	etcdHealthy(t, l)
	mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "test -e /opt/openshift/etcd-bootstrap.done")

	r = mustRun(t, "lab", "checkpoint", "list", "-f", l.SpecFile, "-o", "json")
	var list struct {
		Checkpoints []struct {
			Name    string            `json:"name"`
			Nodes   map[string]string `json:"nodes"`
			Missing []string          `json:"missing"`
		} `json:"checkpoints"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &list))
	names := map[string]bool{}
	for _, cp := range list.Checkpoints {
		names[cp.Name] = true
		assert.Equal(t, map[string]string{st.Spec.DomainName(bs): "running"}, cp.Nodes, "%s: only the node stages change", cp.Name)
		assert.Empty(t, cp.Missing, cp.Name)
	}
	assert.Equal(t, map[string]bool{"before-01": true, "before-07": true}, names, "one checkpoint before each run's first stage")
	out, err := exec.Command("qemu-img", "info", "-U", "--output=json", filepath.Join(s.Storage.PoolDir, s.VolumeName(bs))).Output()
	require.NoError(t, err)
	var info struct {
		ActualSize int64 `json:"actual-size"`
		Snapshots  []struct {
			Name    string `json:"name"`
			VMState int64  `json:"vm-state-size"`
		} `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(out, &info))
	var memory int64 = -1
	for _, sn := range info.Snapshots {
		if sn.Name == "bootlab-before-07" {
			memory = sn.VMState
		}
	}
	require.Positive(t, memory, "the bootstrap's overlay holds before-07 with its memory: %s", out)

	start := time.Now()
	r = mustRun(t, "stage", "reset", "-f", l.SpecFile, "07")
	reset := time.Since(start)
	assert.Contains(t, r.Stderr, "next: bootlab stage run 07")

	// etcd is gone: no process, nothing on 2379.
	r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "cat /proc/[0-9]*/comm 2>/dev/null | grep -cx etcd")
	assert.Equal(t, "0", strings.TrimSpace(r.Stdout), "no etcd process after the reset:\n%s", r)
	r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379'")
	assert.NotEqual(t, 0, r.Code, "nothing listens on 2379 after the reset:\n%s", r)
	// The markers are as they were: 06's there, 07's not.
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n sh -c 'ls /opt/openshift/*.done'")
	assert.Contains(t, r.Stdout, "/opt/openshift/cvo-bootstrap.done")
	assert.NotContains(t, r.Stdout, "etcd-bootstrap.done")
	r = mustRun(t, "stage", "status", "-f", l.SpecFile, "-o", "json")
	var status struct {
		Next   string `json:"next"`
		Stages []struct {
			Number int    `json:"number"`
			State  string `json:"state"`
		} `json:"stages"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &status), r.String())
	assert.True(t, strings.HasPrefix(status.Next, "07"), "after the reset the next stage is 07, got %q", status.Next)
	recordsAfter, err := os.ReadFile(recordsFile)
	require.NoError(t, err)
	assert.Equal(t, string(recordsBefore), string(recordsAfter), "the lab's stage records are the checkpoint's")

	// And 07 runs again (a fresh before-07: the records show no try since).
	r = mustRun(t, "stage", "run", "-f", l.SpecFile, "07")
	assert.Regexp(t, saved, r.Stderr)
	t.Logf("BENCH stage checkpoint of a rehearsal bootstrap (%d MiB, TCG): save %s s, stage reset %.1fs, overlay %s with before-01 and before-07 (before-07's memory %s)",
		bs.MemoryMiB, m[1], reset.Seconds(), mib(info.ActualSize), mib(memory))
}

// etcdHealthy waits for the bootstrap's etcd to answer, as bootkube's
// wait_for_etcd_cluster retries while a new member settles.
func etcdHealthy(t *testing.T, l labEnv) {
	t.Helper()
	var r result
	for i := 0; i < 24; i++ {
		if r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", etcdctlOnNode+"--command-timeout=20s endpoint health"); r.Code == 0 {
			return
		}
		time.Sleep(5 * time.Second)
	}
	logs := run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n crictl logs --tail 30 etcd 2>&1; sudo -n crictl ps -a")
	t.Fatalf("etcdctl endpoint health never succeeded:\n%s\netcd's log:\n%s", r, logs)
}
