//go:build integration

package shims

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

// The kubelet stand-in runs the release's real etcd from a static pod, its
// output in /var/log/pods/<ns>_<name>_<uid>/etcd/0.log in the CRI log
// format; crictl ps lists it with its ids, crictl logs (by id, by name,
// --tail) reads etcd's own lines back, crictl inspect gives its log path,
// and journalctl reads the kubelet's and crio's lines of it.
func TestKubeletLogsReadByCrictlAndJournalctl(t *testing.T) {
	rel := kuberelease.Build(t, kuberelease.DefaultMinor)
	dir := t.TempDir()
	manifests, pods, jdir := filepath.Join(dir, "manifests"), filepath.Join(dir, "pods"), filepath.Join(dir, "journal")
	require.NoError(t, os.MkdirAll(manifests, 0o755))
	tl := &Tools{KubeletState: filepath.Join(dir, "kubelet.json"), JournalDir: jdir}
	log := journal.Tee(slog.New(slog.DiscardHandler), journal.NewWriter(jdir, "kubelet.service", "kubelet", os.Getpid()))
	kl := kubelet.New(log, manifests, nil).WithPaths(tl.KubeletState, pods).
		WithCRIOJournal(journal.NewWriter(jdir, "crio.service", "crio", os.Getpid()))
	ctx, cancel := context.WithCancel(context.Background())
	var st kubelet.PodState
	ran := make(chan struct{})
	t.Cleanup(func() {
		// Stopped as a node shutdown stops it, and waited for: etcd and
		// the kubelet's log copies write into dir until they end.
		cancel()
		<-ran
		kl.Shutdown(context.Background())
	})
	go func() { kl.Run(ctx); close(ran) }()

	client, peer := kubetest.FreePort(t), kubetest.FreePort(t)
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: etcd-bootstrap-member, namespace: openshift-etcd}
spec:
  hostNetwork: true
  containers:
  - name: etcd
    image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:e7cd
    command: [%q]
    args:
    - --name=etcd-bootstrap
    - --data-dir=%s
    - --listen-client-urls=http://127.0.0.1:%s
    - --advertise-client-urls=http://127.0.0.1:%s
    - --listen-peer-urls=http://127.0.0.1:%s
    - --initial-advertise-peer-urls=http://127.0.0.1:%s
    - --initial-cluster=etcd-bootstrap=http://127.0.0.1:%s
`, rel.Etcd, filepath.Join(dir, "etcd-data"), client, client, peer, peer, peer)
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "etcd-member-pod.yaml"), []byte(pod), 0o644))

	require.Eventually(t, func() bool {
		ps, _ := kubelet.LoadState(tl.KubeletState)
		if len(ps) != 1 || !ps[0].Running || ps[0].LogPath == "" {
			return false
		}
		st = ps[0]
		data, _ := os.ReadFile(st.LogPath)
		return bytes.Contains(data, []byte("ready to serve client requests"))
	}, 2*time.Minute, 200*time.Millisecond, "etcd never said it serves")
	assert.Equal(t, filepath.Join(pods, "openshift-etcd_etcd-bootstrap-member_"+st.UID, "etcd", "0.log"), st.LogPath)

	// The log is the CRI format, line by line.
	data, err := os.ReadFile(st.LogPath)
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		_, err := kubelet.ParseLogLine([]byte(l))
		require.NoError(t, err, "not a CRI log line: %.80s", l)
	}

	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := tl.crictlMain(args, &out, &errb)
		return out.String(), errb.String(), code
	}
	out, errs, code := run("ps")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, crictlSays)
	assert.Contains(t, out, st.ID[:13]+"  ")
	assert.Contains(t, out, "etcd-bootstrap-member")
	out, _, _ = run("ps", "-q", "--name", "^etcd$")
	assert.Equal(t, st.ID+"\n", out, "ps -q prints whole ids")
	out, _, _ = run("pods", "-q")
	assert.Equal(t, st.PodID+"\n", out)

	// etcd writes its log to stderr: crictl logs gives it back there.
	for _, ref := range []string{st.ID, st.ID[:13], "etcd"} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, tl.crictlMain([]string{"logs", ref}, &stdout, &stderr), stderr.String())
		assert.Contains(t, stderr.String(), "ready to serve client requests", ref)
		assert.NotContains(t, stderr.String(), " stderr F ", "crictl logs prints the lines, not the log's format")
	}
	var tail bytes.Buffer
	require.Equal(t, 0, tl.crictlMain([]string{"logs", "--tail", "2", st.ID}, &tail, &tail))
	assert.Equal(t, 2, strings.Count(strings.TrimPrefix(tail.String(), crictlSays+": the container's log as the kubelet stand-in keeps it in /var/log/pods\n"), "\n"), tail.String())

	out, errs, code = run("inspect", st.ID[:13])
	require.Equal(t, 0, code, errs)
	var insp struct {
		Status struct {
			ID      string `json:"id"`
			State   string `json:"state"`
			LogPath string `json:"logPath"`
		} `json:"status"`
		Info struct {
			PID int `json:"pid"`
		} `json:"info"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &insp), out)
	assert.Equal(t, st.ID, insp.Status.ID)
	assert.Equal(t, "CONTAINER_RUNNING", insp.Status.State)
	assert.Equal(t, st.LogPath, insp.Status.LogPath)
	assert.Equal(t, st.PID, insp.Info.PID)

	// The gather's listing: crictl ps -a -o json.
	out, _, _ = run("ps", "-a", "-o", "json")
	var ps struct {
		Containers []struct {
			ID       string            `json:"id"`
			Metadata map[string]any    `json:"metadata"`
			Labels   map[string]string `json:"labels"`
		} `json:"containers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ps), out)
	require.Len(t, ps.Containers, 1)
	assert.Equal(t, "etcd", ps.Containers[0].Metadata["name"])
	assert.Equal(t, st.UID, ps.Containers[0].Labels["io.kubernetes.pod.uid"])

	var jout, jerr bytes.Buffer
	require.Equal(t, 0, tl.journalctlMain([]string{"-u", "kubelet", "-u", "crio.service", "--no-pager"}, &jout, &jerr), jerr.String())
	assert.Contains(t, jerr.String(), journalctlSays)
	assert.Contains(t, jout.String(), "kubelet stand-in: started static pod")
	assert.Contains(t, jout.String(), "Started container")
	assert.Contains(t, jout.String(), "containerID="+st.ID)
}
