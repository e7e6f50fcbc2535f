package openshift

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testMirror is a local stand-in of mirror.openshift.com (client tarballs
// and sha256sum.txt) and rhcos.mirror.openshift.com (the qemu qcow2.gz).
type testMirror struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	files map[string][]byte
	// streamJSON is the stream metadata pointing at this mirror's image.
	streamJSON string
	image      []byte
}

const rhcosPath = "/art/storage/prod/streams/rhel-9.6/builds/9.6.20250402-0/x86_64/rhcos-9.6.20250402-0-qemu.x86_64.qcow2.gz"

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func tarGz(t *testing.T, name string, body []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	readme := []byte("README for the test double tarball\n")
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "README.md", Mode: 0o644, Size: int64(len(readme)), Typeflag: tar.TypeReg}))
	tw.Write(readme)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}))
	tw.Write(body)
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func newTestMirror(t *testing.T, version string) *testMirror {
	t.Helper()
	inst, err := os.ReadFile(filepath.Join(testdata, "fake-openshift-install"))
	require.NoError(t, err)
	oc, err := os.ReadFile(filepath.Join(testdata, "fake-oc"))
	require.NoError(t, err)
	m := &testMirror{files: map[string][]byte{}}
	instTar := tarGz(t, "openshift-install", inst)
	ocTar := tarGz(t, "oc", oc)
	base := "/pub/openshift-v4/clients/ocp/" + version + "/"
	m.files[base+"openshift-install-linux.tar.gz"] = instTar
	m.files[base+"openshift-client-linux.tar.gz"] = ocTar
	m.files[base+"sha256sum.txt"] = []byte(fmt.Sprintf("%s  openshift-client-linux.tar.gz\n%s  openshift-install-linux.tar.gz\n%s  release.txt\n",
		sha(ocTar), sha(instTar), strings.Repeat("0", 64)))

	raw := append([]byte("QFI\xfb"), bytes.Repeat([]byte("rhcos test image "), 4096)...)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	m.image = raw
	m.files[rhcosPath] = gz.Bytes()
	stream, err := os.ReadFile(filepath.Join(testdata, "stream.json"))
	require.NoError(t, err)
	s := strings.ReplaceAll(string(stream), "@SHA256@", sha(gz.Bytes()))
	m.streamJSON = strings.ReplaceAll(s, "@UNCOMPRESSED_SHA256@", sha(raw))

	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.paths = append(m.paths, r.URL.Path)
		body, ok := m.files[r.URL.Path]
		m.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, filepath.Base(r.URL.Path), time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *testMirror) clients() string { return m.URL + "/pub/openshift-v4/clients/ocp/" }

func (m *testMirror) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.paths...)
}

// writeStream writes the mirror's stream metadata for the fake installer.
func (m *testMirror) writeStream(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "stream.json")
	require.NoError(t, os.WriteFile(p, []byte(m.streamJSON), 0o644))
	return p
}
