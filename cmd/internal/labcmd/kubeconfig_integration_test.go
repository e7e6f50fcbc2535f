//go:build integration

package labcmd

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// runLabCmd runs a lab command built by newCmd with args; stdout and
// stderr are returned apart.
func runLabCmd(t *testing.T, newCmd func(*cmdutil.Factory) *cobra.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	f := testFactory()
	f.Streams.In = strings.NewReader("")
	f.Log = slog.New(slog.DiscardHandler)
	cmd := newCmd(f)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return f.Streams.Out.(*bytes.Buffer).String(), f.Streams.ErrOut.(*bytes.Buffer).String(), err
}

// installerKubeconfig writes the installer's auth/kubeconfig of lab s for
// cp's admin: it names the API by a name the API's serving certificate
// carries and this machine does not resolve.
func installerKubeconfig(t *testing.T, s *spec.Spec, cp *kubetest.ControlPlane) {
	t.Helper()
	admin, err := os.ReadFile(cp.Files["kubeconfig"])
	require.NoError(t, err)
	installer := strings.Replace(string(admin), "https://127.0.0.1:", "https://kubernetes.default.svc:", 1)
	require.NoError(t, os.MkdirAll(filepath.Join(labdir.Assets(s), "auth"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Assets(s), "auth", "kubeconfig"), []byte(installer), 0o600))
}

// The learner's kubectl against a real kube-apiserver on loopback: `lab
// kubeconfig` writes the lab's admin kubeconfig with a context named after
// the lab; since this machine does not resolve the name the installer's
// kubeconfig gives the API, the server is the load balancer's address
// with that name as tls-server-name, and the release's kubectl (`lab
// kubectl`) verifies the API's certificate against it.
func TestKubeconfigAndKubectlOnTheRealAPI(t *testing.T) {
	isolatedHost(t)
	cp := kuberelease.StartControlPlane(t)

	// An OpenShift lab on loopback: its load balancer address is 127.0.0.1.
	s := &spec.Spec{Name: "kc", Profile: spec.ProfileOpenShift, LabDir: filepath.Join(t.TempDir(), "lab"),
		Libvirt: spec.Libvirt{URI: "test:///default"}, Network: spec.Network{CIDR: "127.0.0.0/24"}}
	s.Defaults()
	require.Equal(t, "127.0.0.1", s.Network.APIAddress)
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))
	installerKubeconfig(t, s, cp)
	target := []string{"--lab-dir", s.LabDir, "--name", s.Name}

	kubeconfig := func(f *cmdutil.Factory) *cobra.Command { return NewCmdKubeconfig(f, nil) }
	kubectl := func(f *cmdutil.Factory) *cobra.Command { return NewCmdKubectl(f, nil) }

	out, errOut, err := runLabCmd(t, kubeconfig, target...)
	require.NoError(t, err, errOut)
	path := strings.TrimSpace(out)
	assert.Equal(t, filepath.Join(s.LabDir, "kubeconfig"), path, "stdout is the path alone")
	assert.Contains(t, errOut, "export KUBECONFIG="+path)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "it holds the admin's key")

	var kc struct {
		CurrentContext string `json:"current-context"`
		Clusters       []struct {
			Cluster map[string]any `json:"cluster"`
		} `json:"clusters"`
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &kc))
	assert.Equal(t, "bootlab-kc", kc.CurrentContext)
	require.Len(t, kc.Clusters, 1)
	assert.Equal(t, "https://127.0.0.1:"+cp.APIPort, kc.Clusters[0].Cluster["server"])
	assert.Equal(t, "kubernetes.default.svc", kc.Clusters[0].Cluster["tls-server-name"])
	assert.NotContains(t, string(data), "insecure-skip-tls-verify")
	assert.NotContains(t, string(data), cp.Files["admin.key"], "certificates inline: the file works wherever it is copied")

	out, errOut, err = runLabCmd(t, kubectl, append(target, "--", "get", "--raw", "/readyz")...)
	require.NoError(t, err, errOut)
	assert.Equal(t, "ok", out)

	// Any kubectl takes the file, with the lab's context.
	raw, err := exec.Command(filepath.Join(cp.Bin, "kubectl"), "--kubeconfig", path, "--context", "bootlab-kc", "get", "ns", "kube-system", "-o", "name").CombinedOutput()
	require.NoError(t, err, string(raw))
	assert.Equal(t, "namespace/kube-system\n", string(raw))

	// kubectl's failure is its own, with its exit code.
	_, errOut, err = runLabCmd(t, kubectl, append(target, "--", "get", "cm", "-n", "kube-system", "no-such-map")...)
	var ce cmdutil.ExitCoder
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, ce.ExitCode())
	assert.Contains(t, errOut, `configmaps "no-such-map" not found`)

	// The certificate is really checked: a name it does not carry fails.
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), "tls-server-name: kubernetes.default.svc", "tls-server-name: api.elsewhere.example", 1)), 0o600))
	_, errOut, err = runLabCmd(t, kubectl, append(target, "--", "get", "--raw", "/readyz")...)
	require.Error(t, err)
	assert.Contains(t, errOut, "x509: certificate is valid for")
}
