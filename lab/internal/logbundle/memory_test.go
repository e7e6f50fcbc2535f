package logbundle

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// held is a Holder of files and directories by path.
type held struct {
	files map[string]string
	dirs  map[string]bool
}

func (h *held) Add(rel, _ string, data []byte) error { h.files[rel] = string(data); return nil }
func (h *held) AddDir(rel string)                    { h.dirs[rel] = true }

// A bundle held in memory lets in what a written one does: credentials
// left out or cut, the limits kept, what was left out listed in
// MissingFile; and only the files it wants.
func TestMemoryFiltersAsTheWriter(t *testing.T) {
	t.Parallel()
	h := &held{files: map[string]string{}, dirs: map[string]bool{}}
	m := NewMemory(h, Limits{File: 64, Total: 1 << 10}, func(rel string) bool { return !strings.HasSuffix(rel, ".inspect") })
	require.NoError(t, m.Dir("control-plane/10.0.0.11"))
	_, err := m.Add("bootstrap/journals/bootkube.log", []byte("May 14 10:00:00 bootstrap bootkube.sh[1]: token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl\n"))
	require.NoError(t, err)
	_, err = m.Add("rendered-assets/openshift/auth/kubeconfig", []byte("x"))
	require.NoError(t, err)
	_, err = m.Add("bootstrap/containers/etcd-1.inspect", []byte("{}"))
	require.NoError(t, err)
	_, err = m.Add("bootstrap/journals/kubelet.log", []byte(strings.Repeat("a line of the kubelet\n", 10)))
	require.NoError(t, err)
	_, err = m.Add("../out", []byte("x"))
	assert.Error(t, err)
	require.NoError(t, m.Commit())

	assert.True(t, h.dirs["control-plane/10.0.0.11"])
	assert.NotContains(t, h.files["bootstrap/journals/bootkube.log"], "eyJ")
	assert.Contains(t, h.files["bootstrap/journals/bootkube.log"], Removed)
	assert.NotContains(t, h.files, "rendered-assets/openshift/auth/kubeconfig")
	assert.NotContains(t, h.files, "bootstrap/containers/etcd-1.inspect", "a file it does not want")
	assert.LessOrEqual(t, len(h.files["bootstrap/journals/kubelet.log"]), 64)
	var ms struct{ Missing []Missing }
	require.NoError(t, json.Unmarshal([]byte(h.files[MissingFile]), &ms))
	text := ""
	for _, e := range ms.Missing {
		text += e.File + ": " + e.Why + "\n"
	}
	assert.Contains(t, text, "rendered-assets/openshift/auth/kubeconfig: left out: under auth/")
	assert.Contains(t, text, "bootstrap/journals/kubelet.log: only its last")
	assert.NotContains(t, text, "inspect", "what it does not want is not missing: nobody reads it")
}
