package standin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
)

// A missing object fails the install with its name and what creates it,
// and nothing lands in the manifests directory.
func TestKASInstallerNamesTheMissingObject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inst := &KASInstaller{Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Source: mapSource{},
		StaticPodDir: filepath.Join(dir, "manifests"), Input: controlplane.MasterInput{ResourcesDir: dir}}
	err := inst.Install(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read configmaps openshift-kube-apiserver/etcd-serving-ca (stage 13 creates it from /opt/openshift/manifests)")
	_, err = os.Stat(filepath.Join(dir, "manifests", "kube-apiserver-pod.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

type mapSource map[string]map[string][]byte

func (m mapSource) Data(_ context.Context, kind, ns, name string) (map[string][]byte, error) {
	d, ok := m[kind+"/"+ns+"/"+name]
	if !ok {
		return nil, fmt.Errorf("%s %q not found", kind, name)
	}
	return d, nil
}

// Sources takes an object from the first source that has it: the node's
// etcd files before the API, the API for everything else, and its error
// (not "not here") when the API lacks it.
func TestSourcesTakeTheNodesEtcdFilesFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"ca", "crt", "key"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("file "+n), 0o600))
	}
	api := mapSource{"configmaps/openshift-kube-apiserver/client-ca": {"ca-bundle.crt": []byte("api ca")},
		"secrets/openshift-kube-apiserver/etcd-client": {"tls.crt": []byte("api's, not taken")}}
	src := Sources{MasterEtcdFiles(filepath.Join(dir, "ca"), filepath.Join(dir, "crt"), filepath.Join(dir, "key")), api}
	ctx := context.Background()
	for _, tc := range []struct {
		kind, name string
		want       map[string][]byte
		err        string
	}{
		{"secrets", "etcd-client", map[string][]byte{"tls.crt": []byte("file crt"), "tls.key": []byte("file key")}, ""},
		{"configmaps", "etcd-serving-ca", map[string][]byte{"ca-bundle.crt": []byte("file ca")}, ""},
		{"configmaps", "client-ca", map[string][]byte{"ca-bundle.crt": []byte("api ca")}, ""},
		{"secrets", "kubelet-client", nil, `secrets "kubelet-client" not found`},
	} {
		got, err := src.Data(ctx, tc.kind, controlplane.MasterNamespace, tc.name)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}
