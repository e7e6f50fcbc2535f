//go:build integration

package installer

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/renders"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/lab/probe"
)

// The masters' controller manager and scheduler as their installer
// stand-ins leave them on a node: from the objects stages 09 and 10's
// renders write (as stage 13 creates them) and the client pair of the
// master's served config, every file the pod's flags name exists on the
// host once the kubelet stand-in maps the flags, and the release's real
// kubectl loads the kubeconfig from the host path with everything it names
// (relative paths: the stand-in runs the program on the host, where the
// pod's absolute container paths do not exist; that exited both programs
// with status 1 on VMs).
func TestOperandInstallersLeaveRunnablePods(t *testing.T) {
	t.Parallel()
	rel := kuberelease.Build(t, "4.19")
	tlsDir := t.TempDir()
	ca, err := pki.NewCA("bootlab-test-root")
	require.NoError(t, err)
	files, err := probe.ControlPlaneTLS(ca, "ocp.lab.local", controlplane.DefaultServiceCIDR)
	require.NoError(t, err)
	files = append(files, probe.TLSFile{Name: controlplane.RootCA, Mode: 0o644, Data: ca.CertPEM})
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(tlsDir, f.Name), f.Data, os.FileMode(f.Mode)))
	}
	for _, o := range []controlplane.Operand{controlplane.KubeControllerManagerOperand, controlplane.KubeSchedulerOperand} {
		src := renderedSource(t, o, tlsDir)
		client, err := pki.NewClient(ca, o.ClientUser(), nil)
		require.NoError(t, err)
		src["secrets/"+o.Namespace+"/"+o.ClientSecret()] = map[string][]byte{"tls.crt": client.CertPEM, "tls.key": client.KeyPEM}
		dir := t.TempDir()
		in := controlplane.MasterInput{ResourcesDir: filepath.Join(dir, "static-pod-resources")}
		inst := &Installer{Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Operand: o, Source: src,
			StaticPodDir: filepath.Join(dir, "manifests"), Input: in}
		require.NoError(t, inst.Install(context.Background()), o.Component)

		pod := o.Pod(in, "hyperkube")
		ctr := pod.Pod.Spec.Containers[0]
		argv := kubelet.HostArgs(pod.Pod, ctr, append(append([]string(nil), ctr.Command...), ctr.Args...))
		var kubeconfig string
		for _, a := range argv[1:] {
			k, v, ok := strings.Cut(a, "=")
			if !ok || !strings.HasPrefix(v, "/") {
				continue
			}
			assert.FileExists(t, v, "%s %s on the host", o.Component, k)
			if k == "--kubeconfig" {
				kubeconfig = v
			}
		}
		require.NotEmpty(t, kubeconfig, o.Component)
		out, err := exec.Command(filepath.Join(rel.Programs, "kubectl"), "config", "view", "--raw", "--flatten", "--kubeconfig="+kubeconfig).CombinedOutput()
		require.NoError(t, err, "%s: kubectl loads its kubeconfig from the host: %s", o.Component, out)
		assert.Contains(t, string(out), "client-certificate-data: "+base64.StdEncoding.EncodeToString(client.CertPEM), o.Component)
		assert.Contains(t, string(out), "certificate-authority-data: "+base64.StdEncoding.EncodeToString(ca.CertPEM), o.Component)
		assert.Contains(t, string(out), "server: https://localhost:6443", o.Component)
	}
}

// renderedSource is what stage 13 creates from o's render: the objects
// renders.OperandObjects writes, by kind/namespace/name, secrets decoded.
func renderedSource(t *testing.T, o controlplane.Operand, tlsDir string) mapSource {
	t.Helper()
	objs, err := renders.OperandObjects(o, tlsDir)
	require.NoError(t, err)
	src := mapSource{}
	for _, fo := range objs {
		var obj struct {
			Kind     string            `json:"kind"`
			Metadata map[string]string `json:"metadata"`
			Data     map[string]string `json:"data"`
		}
		require.NoError(t, yaml.Unmarshal(fo.Data, &obj))
		kind := "configmaps"
		if obj.Kind == "Secret" {
			kind = "secrets"
		}
		d := map[string][]byte{}
		for k, v := range obj.Data {
			d[k] = []byte(v)
			if kind == "secrets" {
				d[k], err = base64.StdEncoding.DecodeString(v)
				require.NoError(t, err)
			}
		}
		src[kind+"/"+obj.Metadata["namespace"]+"/"+obj.Metadata["name"]] = d
	}
	return src
}
