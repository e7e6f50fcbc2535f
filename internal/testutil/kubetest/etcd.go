package kubetest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Etcd is one etcd member on loopback and the release's etcdctl to ask it.
type Etcd struct {
	*Server
	// Endpoint is its client URL, Etcdctl the etcdctl program (a link to
	// the multi-call etcd binary).
	Endpoint, Etcdctl string
}

// StartEtcd starts a one-member etcd named name on 127.0.0.1 whose peer
// URL names peerHost (the address a lab node's member has: a one-member
// cluster never dials its own peer URL) and waits until etcdctl finds it
// healthy. Cleanup kills it.
func StartEtcd(t testing.TB, etcdPath, name, peerHost string) *Etcd {
	t.Helper()
	dir := t.TempDir()
	client, peer := FreePort(t), FreePort(t)
	advertise := "http://" + peerHost + ":" + peer
	e := &Etcd{Endpoint: "http://127.0.0.1:" + client, Etcdctl: filepath.Join(Links(t, etcdPath, []string{"etcdctl"}), "etcdctl")}
	e.Server = Start(t, filepath.Join(dir, "etcd.log"), etcdPath,
		"--name="+name, "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+e.Endpoint, "--advertise-client-urls="+e.Endpoint,
		"--listen-peer-urls=http://127.0.0.1:"+peer, "--initial-advertise-peer-urls="+advertise,
		"--initial-cluster="+name+"="+advertise)
	WaitFor(t, time.Minute, "etcd's endpoint health", e.Server, func() (string, bool) {
		out, err := e.Ctl("endpoint", "health")
		return out, err == nil
	})
	return e
}

// Ctl runs etcdctl against the member and returns its stdout; the error
// carries its stderr.
func (e *Etcd) Ctl(args ...string) (string, error) {
	cmd := exec.Command(e.Etcdctl, append([]string{"--endpoints=" + e.Endpoint, "--dial-timeout=3s"}, args...)...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("etcdctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return string(out), nil
}

// API posts body (JSON) to path of etcd's v3 JSON API, as the agents read
// the members, and returns the answer; a status other than 200 is an error.
func (e *Etcd) API(path, body string) (string, error) {
	resp, err := http.Post(e.Endpoint+path, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("POST %s: %s: %s", path, resp.Status, out)
	}
	return string(out), err
}
