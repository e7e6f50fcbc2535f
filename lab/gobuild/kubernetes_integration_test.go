//go:build integration

package gobuild

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/release"
)

// buildTimeout is generous: the cold build of Kubernetes on a fresh
// 2-core CI machine takes about ten minutes (docs/cache.md), once per
// test run.
const buildTimeout = 25 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// ensureShared returns the default release's component from the run's
// shared cache, building it the first time.
func ensureShared(t *testing.T, c Component) *Binary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	b, err := Ensure(ctx, os.Getenv(kubetest.SharedCacheEnv), c, nil)
	require.NoError(t, err)
	if b.Built {
		fi, err := os.Stat(b.Path)
		require.NoError(t, err)
		t.Logf("%s %s: built in %s, %d bytes", c.Name, c.Version, b.Took.Round(time.Second), fi.Size())
	}
	return b
}

func defaultKubernetes(t *testing.T) (release.Release, *Binary) {
	t.Helper()
	r, err := release.For("4.19")
	require.NoError(t, err)
	c, err := Kubernetes(r.Kubernetes)
	require.NoError(t, err)
	return r, ensureShared(t, c)
}

// links makes a directory where each of the binary's program names is a
// symlink to it, as the nodes will have them.
func links(t *testing.T, b *Binary) string {
	t.Helper()
	return kubetest.Links(t, b.Path, b.Component.Programs)
}

// The multi-call binary is static and is each program by its name, and
// by its first argument when called hyperkube; every program reports the
// release's Kubernetes version.
func TestKubernetesBinaryAnswersByName(t *testing.T) {
	t.Parallel()
	r, b := defaultKubernetes(t)
	f, err := elf.Open(b.Path)
	require.NoError(t, err)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "hyperkube must be static")
	}
	f.Close()
	bin := links(t, b)
	want := "Kubernetes v" + r.Kubernetes + "\n"
	for _, args := range [][]string{
		{"kube-apiserver", "--version"}, {"kube-controller-manager", "--version"},
		{"kube-scheduler", "--version"}, {"hyperkube", "kube-apiserver", "--version"},
	} {
		out, err := exec.Command(filepath.Join(bin, args[0]), args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		assert.Equal(t, want, string(out), "%v", args)
	}
	for _, args := range [][]string{{"kubectl", "version", "--client"}, {"hyperkube", "kubectl", "version", "--client"}} {
		out, err := exec.Command(filepath.Join(bin, args[0]), args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		assert.Contains(t, string(out), "Client Version: v"+r.Kubernetes+"\n", "%v", args)
	}
	out, err := exec.Command(filepath.Join(bin, "hyperkube"), "kubelet").CombinedOutput()
	assert.Error(t, err, "hyperkube has no kubelet")
	assert.Contains(t, string(out), "hyperkube NAME [ARGS]")
}

// The release's kube-apiserver really serves: against a real etcd on
// loopback, with RBAC, a client CA and an admin certificate from internal/pki;
// kubectl (the same binary) reads /readyz and writes and reads back
// kube-system/bootstrap; both servers stop on SIGTERM.
func TestKubeAPIServerServesOnEtcd(t *testing.T) {
	t.Parallel()
	r, kube := defaultKubernetes(t)
	ec, err := Etcd(r.Etcd.Module)
	require.NoError(t, err)
	etcd := ensureShared(t, ec)
	cp := kubetest.StartControlPlane(t, etcd.Path, links(t, kube))

	kubetest.WaitFor(t, 2*time.Minute, "kubectl create configmap kube-system/bootstrap", cp.API, func() (string, bool) {
		out, err := cp.Kubectl("create", "configmap", "bootstrap", "-n", "kube-system", "--from-literal=status=complete")
		return out, err == nil // kube-system may not exist for a moment after readyz
	})
	out, err := cp.Kubectl("get", "configmap", "bootstrap", "-n", "kube-system", "-o", "jsonpath={.data.status}")
	require.NoError(t, err, out)
	assert.Equal(t, "complete", out)
	out, err = cp.Kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.NoError(t, err, out)
	assert.Equal(t, "admin", out, "kubectl authenticates with the admin certificate from internal/pki")
	cp.Stop(t)
}
