//go:build integration

package labcmd

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// A lab on a remote hypervisor: `lab kubeconfig` points the kubeconfig at
// its local tunnel and, while it runs, forwards the tunnel over the
// hypervisor host's SSH connection (an SSH server on this machine) to the
// load balancer's 6443 (a forwarder on the lab's API address in front of
// a real kube-apiserver); kubectl through the kubeconfig reads /readyz
// and the API's objects, and the certificate is checked on the way. Once
// the command ends, nothing listens on the tunnel.
func TestKubeconfigTunnelsToARemoteLabsAPI(t *testing.T) {
	isolatedHost(t)
	cp := kuberelease.StartControlPlane(t)
	hyper := sshctest.Start(t)
	dir := t.TempDir()
	s := &spec.Spec{Name: "kcr", Profile: spec.ProfileOpenShift, LabDir: filepath.Join(dir, "lab"),
		Libvirt: spec.Libvirt{URI: hyper.LibvirtURI(t, filepath.Join(dir, "known_hosts"))}, Network: spec.Network{CIDR: "127.77.0.0/24"}}
	s.Defaults()
	require.True(t, s.Remote())
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))
	installerKubeconfig(t, s, cp)
	lb := listenLB(t, net.JoinHostPort(s.Network.APIAddress, "6443"), "127.0.0.1:"+cp.APIPort)
	tunnel := "127.0.0.1:" + kubetest.FreePort(t)

	ctx, cancel := context.WithCancel(t.Context())
	f := testFactory()
	errOut := &testutil.SyncBuffer{}
	f.Streams.ErrOut, f.Log = errOut, slog.New(slog.DiscardHandler)
	cmd := NewCmdKubeconfig(f, nil)
	cmd.SetArgs([]string{"--lab-dir", s.LabDir, "--name", s.Name, "--tunnel", tunnel})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "forwarding "+tunnel) }, 30*time.Second, 100*time.Millisecond, errOut.String())

	path := strings.TrimSpace(f.Streams.Out.(*bytes.Buffer).String())
	assert.Equal(t, labdir.Kubeconfig(s), path)
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(cp.Bin, "kubectl"), append([]string{"--kubeconfig", path}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server} {.clusters[0].cluster.tls-server-name}")
	require.NoError(t, err, out)
	assert.Equal(t, "https://"+tunnel+" kubernetes.default.svc", out, "the server is the tunnel, the certificate checked for the API's name")
	out, err = kubectl("get", "--raw", "/readyz")
	require.NoError(t, err, out)
	assert.Equal(t, "ok", out)
	out, err = kubectl("get", "ns", "kube-system", "-o", "name")
	require.NoError(t, err, out)
	assert.Equal(t, "namespace/kube-system\n", out)
	out, stderr, err := runLabCmd(t, func(f *cmdutil.Factory) *cobra.Command { return NewCmdKubectl(f, nil) },
		"--lab-dir", s.LabDir, "--name", s.Name, "--", "get", "--raw", "/readyz")
	require.NoError(t, err, stderr)
	assert.Equal(t, "ok", out, "lab kubectl takes the same tunnel")
	assert.Contains(t, hyper.Dials(), "tcp "+net.JoinHostPort(s.Network.APIAddress, "6443"), "the API was dialled from the hypervisor host")
	assert.Positive(t, lb.Load(), "the connections reached the load balancer")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "Ctrl-C ends the tunnel cleanly")
	case <-time.After(30 * time.Second):
		t.Fatal("lab kubeconfig did not end with its context")
	}
	_, err = net.DialTimeout("tcp", tunnel, time.Second)
	assert.Error(t, err, "nothing listens on the tunnel once the command ended")
}

// counter counts the connections a listener accepted.
type counter struct{ n chan struct{} }

// Load is how many connections were accepted so far.
func (c *counter) Load() int { return len(c.n) }

// listenLB stands for the lab's load balancer: it forwards each
// connection to addr on to backend until the test ends.
func listenLB(t *testing.T, addr, backend string) *counter {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "listen on the lab's API address %s", addr)
	t.Cleanup(func() { ln.Close() })
	c := &counter{n: make(chan struct{}, 1024)}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.n <- struct{}{}
			go func() {
				up, err := net.Dial("tcp", backend)
				if err != nil {
					in.Close()
					return
				}
				// Either side ending ends both, as haproxy does: the
				// API would keep an idle connection open for 90 s.
				closeBoth := func() { in.Close(); up.Close() }
				go func() { _, _ = io.Copy(up, in); closeBoth() }()
				_, _ = io.Copy(in, up)
				closeBoth()
			}()
		}
	}()
	return c
}
