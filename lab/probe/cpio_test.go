package probe

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeTestArchive(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewCPIOWriter(&b)
	require.NoError(t, w.Dir("dev", 0o755))
	require.NoError(t, w.CharDev("dev/console", 0o600, 5, 1))
	require.NoError(t, w.File("init", 0o755, []byte("#!/bin/sh\necho hi\n")))
	require.NoError(t, w.Dir("lib", 0o755))
	require.NoError(t, w.File("/lib/odd-size.ko", 0o644, []byte("abcde")))
	require.NoError(t, w.Symlink("sbin", "lib"))
	require.NoError(t, w.Close())
	return b.Bytes()
}

func TestCPIOLayout(t *testing.T) {
	data := writeTestArchive(t)
	assert.Zero(t, len(data)%4)
	assert.True(t, bytes.HasPrefix(data, []byte("070701")))
	// first entry: "dev", ino 2, mode 040755, nlink 2, namesize 4
	assert.Equal(t, "070701"+"00000002"+"000041ed"+"00000000"+"00000000"+"00000002", string(data[:46]))
	assert.Equal(t, "00000004", string(data[94:102]))
	assert.Equal(t, "dev\x00", string(data[110:114]))
	assert.Contains(t, string(data), "TRAILER!!!\x00")
}

// TestCPIOReadByCpio unpacks the archive with GNU cpio, when installed,
// as an independent reader (apt-get install -y cpio).
func TestCPIOReadByCpio(t *testing.T) {
	if _, err := exec.LookPath("cpio"); err != nil {
		t.Fatalf("cpio is needed for this test: apt-get install -y cpio")
	}
	dir := t.TempDir()
	cmd := exec.Command("cpio", "-t", "-v")
	cmd.Stdin = bytes.NewReader(writeTestArchive(t))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	for _, want := range []string{"dev/console", "init", "lib/odd-size.ko", "sbin -> lib"} {
		assert.Contains(t, string(out), want)
	}
	cmd = exec.Command("cpio", "-i", "-d", "--no-absolute-filenames", "--nonmatching", "dev/console")
	cmd.Stdin = bytes.NewReader(writeTestArchive(t))
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	got, err := os.ReadFile(filepath.Join(dir, "lib", "odd-size.ko"))
	require.NoError(t, err)
	assert.Equal(t, "abcde", string(got))
	fi, err := os.Stat(filepath.Join(dir, "init"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
}

func TestCheckStaticRefusesDynamicAgent(t *testing.T) {
	sh, err := os.ReadFile("/bin/sh")
	require.NoError(t, err)
	err = checkStatic("/bin/sh", sh)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CGO_ENABLED=0")
	assert.Error(t, checkStatic("x", []byte("#!/bin/sh\n")))

	assert.NoError(t, checkStatic("agent", buildAgent(t)))
}

// buildAgent builds the real agent, static, once per test binary.
func buildAgent(t *testing.T) []byte {
	t.Helper()
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bootlab-agent-")
		if err != nil {
			agentErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "agent")
		cmd := exec.Command("go", "build", "-o", out, "../../cmd/bootlab-probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("%v: %s", err, b)
			return
		}
		agentBin, agentErr = os.ReadFile(out)
	})
	require.NoError(t, agentErr)
	return agentBin
}

var (
	agentOnce sync.Once
	agentBin  []byte
	agentErr  error
)
