// Package kuberelease builds a release's etcd and Kubernetes for the
// integration tests that run them on loopback (apart from kubetest, which
// lab/gobuild's own tests use, so kubetest cannot import lab/gobuild).
// Test code only.
package kuberelease

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil/kubetest"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/release"
)

// Release is a release's etcd and Kubernetes as the tests run them.
type Release struct {
	Etcd     string // the etcd binary
	Programs string // a directory of the Kubernetes programs, linked as on a node
	Version  string // the Kubernetes version as a kubelet reports it ("v1.32.13")
}

// Build builds (once; then from the cache SharedCacheEnv names, by
// default the machine's bootlab cache) the etcd and Kubernetes of an
// OpenShift minor.
func Build(t testing.TB, minor string) Release {
	t.Helper()
	dir := os.Getenv(kubetest.SharedCacheEnv)
	if dir == "" {
		dir = cache.Dir()
	}
	r, err := release.For(minor)
	require.NoError(t, err)
	kc, err := gobuild.Kubernetes(r.Kubernetes)
	require.NoError(t, err)
	ec, err := gobuild.Etcd(r.Etcd.Module)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	kube, err := gobuild.Ensure(ctx, dir, kc, nil)
	require.NoError(t, err)
	etcd, err := gobuild.Ensure(ctx, dir, ec, nil)
	require.NoError(t, err)
	return Release{Etcd: etcd.Path, Programs: kubetest.Links(t, kube.Path, kc.Programs), Version: "v" + r.Kubernetes}
}

// DefaultMinor is the OpenShift minor the tests that need some real API
// run: its Kubernetes is the one make test-binaries caches.
const DefaultMinor = "4.19"

// StartControlPlane builds DefaultMinor's release (see Build) and starts
// its etcd and kube-apiserver on loopback (kubetest.StartControlPlane,
// with apiArgs).
func StartControlPlane(t testing.TB, apiArgs ...string) *kubetest.ControlPlane {
	t.Helper()
	rel := Build(t, DefaultMinor)
	return kubetest.StartControlPlane(t, rel.Etcd, rel.Programs, apiArgs...)
}
