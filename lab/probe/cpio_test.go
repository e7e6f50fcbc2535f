package probe

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	t.Parallel()
	data := writeTestArchive(t)
	assert.Zero(t, len(data)%4)
	assert.True(t, bytes.HasPrefix(data, []byte("070701")))
	// first entry: "dev", ino 2, mode 040755, nlink 2, namesize 4
	assert.Equal(t, "070701"+"00000002"+"000041ed"+"00000000"+"00000000"+"00000002", string(data[:46]))
	assert.Equal(t, "00000004", string(data[94:102]))
	assert.Equal(t, "dev\x00", string(data[110:114]))
	assert.Contains(t, string(data), "TRAILER!!!\x00")
}

// cpioEntries are written by TestCPIOListedByCpio and listed back by GNU
// cpio. Names of every length mod 4 and bodies of every size mod 4 cover the
// padding; the want column is what `cpio -tv --numeric-uid-gid` prints:
// mode, links, size (or major,minor) and name, written out by hand.
var cpioEntries = []struct {
	add  func(*CPIOWriter) error
	want string
}{
	{func(w *CPIOWriter) error { return w.Dir("dev", 0o755) }, "drwxr-xr-x 2 0 dev"},
	{func(w *CPIOWriter) error { return w.CharDev("dev/console", 0o600, 5, 1) }, "crw------- 1 5,1 dev/console"},
	{func(w *CPIOWriter) error { return w.CharDev("dev/null", 0o666, 1, 3) }, "crw-rw-rw- 1 1,3 dev/null"},
	{func(w *CPIOWriter) error { return w.File("init", 0o755, []byte("#!/bin/sh\necho hi\n")) }, "-rwxr-xr-x 1 18 init"},
	{func(w *CPIOWriter) error { return w.Dir("lib", 0o755) }, "drwxr-xr-x 2 0 lib"},
	{func(w *CPIOWriter) error { return w.Dir("lib/modules", 0o700) }, "drwx------ 2 0 lib/modules"},
	{func(w *CPIOWriter) error { return w.File("/lib/odd-size.ko", 0o644, []byte("abcde")) }, "-rw-r--r-- 1 5 lib/odd-size.ko"},
	{func(w *CPIOWriter) error { return w.File("lib/modules/a", 0o600, bytes.Repeat([]byte{7}, 4097)) }, "-rw------- 1 4097 lib/modules/a"},
	{func(w *CPIOWriter) error { return w.File("lib/modules/ab", 0o400, []byte("xy")) }, "-r-------- 1 2 lib/modules/ab"},
	{func(w *CPIOWriter) error { return w.File("lib/modules/abc", 0o644, []byte("xyz")) }, "-rw-r--r-- 1 3 lib/modules/abc"},
	{func(w *CPIOWriter) error { return w.File("lib/modules/abcd", 0o644, nil) }, "-rw-r--r-- 1 0 lib/modules/abcd"},
	{func(w *CPIOWriter) error { return w.Symlink("sbin", "lib") }, "lrwxrwxrwx 1 3 sbin -> lib"},
}

var cpioDevice = regexp.MustCompile(`(\d+),\s+(\d+)`)

// TestCPIOListedByCpio reads the archive with GNU cpio, an independent
// reader, and checks that it lists exactly the entries written, in order,
// with their modes, sizes and device numbers. The kernel's own unpacker
// reads the same bytes in every e2e boot: the probe agent is the /init it
// unpacks. We keep this writer rather than github.com/cavaliergopher/cpio
// v1.0.1 because that one never writes rdevmajor/rdevminor, and the
// initramfs needs /dev/console (5,1) and /dev/null (1,3).
func TestCPIOListedByCpio(t *testing.T) {
	t.Parallel()
	cpioPath, err := exec.LookPath("cpio")
	require.NoError(t, err, "cpio is needed for this test: apt-get install -y cpio (scripts/host/setup.sh --test does)")
	var b bytes.Buffer
	w := NewCPIOWriter(&b)
	var want []string
	for _, e := range cpioEntries {
		require.NoError(t, e.add(w))
		want = append(want, e.want)
	}
	require.NoError(t, w.Close())
	archive := b.Bytes()

	cmd := exec.Command(cpioPath, "-t", "-v", "--numeric-uid-gid")
	cmd.Stdin = bytes.NewReader(archive)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		// mode links uid gid size|maj,min month day year name [-> target]
		f := strings.Fields(cpioDevice.ReplaceAllString(line, "$1,$2"))
		require.GreaterOrEqual(t, len(f), 9, "unexpected cpio -tv line %q", line)
		assert.Equal(t, []string{"0", "0"}, f[2:4], "owned by root: %q", line)
		got = append(got, strings.Join(append([]string{f[0], f[1], f[4]}, f[8:]...), " "))
	}
	assert.Equal(t, want, got)
	assert.Equal(t, fmt.Sprintf("%d blocks\n", (len(archive)+511)/512), stderr.String(), "cpio read to the trailer and no further")

	dir := t.TempDir()
	cmd = exec.Command(cpioPath, "-i", "-d", "--no-absolute-filenames", "--nonmatching", "dev/*")
	cmd.Stdin = bytes.NewReader(archive)
	cmd.Dir = dir
	b2, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b2))
	got2, err := os.ReadFile(filepath.Join(dir, "lib", "odd-size.ko"))
	require.NoError(t, err)
	assert.Equal(t, "abcde", string(got2))
	got2, err = os.ReadFile(filepath.Join(dir, "lib", "modules", "a"))
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat([]byte{7}, 4097), got2)
	fi, err := os.Stat(filepath.Join(dir, "init"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	target, err := os.Readlink(filepath.Join(dir, "sbin"))
	require.NoError(t, err)
	assert.Equal(t, "lib", target)
}

func TestCheckStaticRefusesDynamicAgent(t *testing.T) {
	t.Parallel()
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
