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
