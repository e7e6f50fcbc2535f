package probe

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpioNames lists the entry names of a gzip'd newc archive.
func cpioNames(t *testing.T, data []byte) map[string]uint32 {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	out := map[string]uint32{}
	for len(raw) >= 110 {
		var mode, size, nameLen uint32
		hex := func(i int) uint32 {
			var v uint32
			for _, c := range raw[6+8*i : 6+8*i+8] {
				v <<= 4
				switch {
				case c >= '0' && c <= '9':
					v |= uint32(c - '0')
				default:
					v |= uint32(c-'a') + 10
				}
			}
			return v
		}
		mode, size, nameLen = hex(1), hex(6), hex(11)
		name := string(raw[110 : 110+nameLen-1])
		if name == "TRAILER!!!" {
			break
		}
		out[name] = mode
		off := (110 + int(nameLen) + 3) &^ 3
		off = (off + int(size) + 3) &^ 3
		raw = raw[off:]
	}
	return out
}

// The host's own bash (a dynamically linked Debian program) comes with
// every library it needs and the loader, found through absolute links.
func TestWriteToolsResolvesLibraries(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Fatalf("the test reads the host's /bin/bash: %v", err)
	}
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	data, err := os.ReadFile("/bin/bash")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "bin", "bash"), data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "bin", "egrep"), []byte("#!/bin/sh\nexec grep -E \"$@\"\n"), 0o755))
	require.NoError(t, os.Symlink("bash", filepath.Join(root, "bin", "rbash")))

	var buf bytes.Buffer
	files, err := writeTools(&buf, gzip.BestCompression, []string{root}, []string{root, "/"}, staticProgram{[]string{"etcd", "etcdctl"}, []byte("static etcd")})
	require.NoError(t, err)
	assert.Contains(t, files, "usr/bin/etcd")
	assert.Contains(t, files, "usr/bin/etcdctl", "a program link is listed with the programs")
	assert.Contains(t, files, "usr/bin/bash")
	assert.Contains(t, files, "usr/bin/egrep")
	assert.NotContains(t, files, "usr/bin/rbash", "links are left out")
	assert.Contains(t, files, "lib/x86_64-linux-gnu/libc.so.6")
	assert.Contains(t, files, "lib/x86_64-linux-gnu/libtinfo.so.6")
	assert.Contains(t, files, "lib64/ld-linux-x86-64.so.2")

	names := cpioNames(t, buf.Bytes())
	assert.Equal(t, uint32(0o100755), names["usr/bin/bash"])
	assert.Equal(t, uint32(0o120777), names["bin"], "bin is a link to usr/bin")
	assert.Equal(t, uint32(0o100755), names["usr/bin/etcd"], "a static program is carried as is")
	assert.Equal(t, uint32(0o120777), names["usr/bin/etcdctl"], "its other names link to it")
	assert.Contains(t, names, "etc/passwd")
	assert.Contains(t, names, "var/home/core")

	// A library no package has is named, with what to do.
	_, err = writeTools(&buf, gzip.BestCompression, []string{root}, []string{root})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "of usr/bin/bash")
}
