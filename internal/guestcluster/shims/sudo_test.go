package shims

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sudo stand-in (the agent under the name sudo) runs the command as
// root for core, set-user-ID, with a clean environment, and refuses what
// it does not do.
func TestSudoStandIn(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the test makes a set-user-ID root binary: run the tests as root")
	}
	// Not under t.TempDir(), whose parent core may not traverse.
	dir, err := os.MkdirTemp("", "bootlab-sudo-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	sudo := filepath.Join(dir, "sudo")
	var out []byte
	build := exec.Command("go", "build", "-o", sudo, "github.com/bootlab/bootlab/cmd/bootlab-probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Chmod(sudo, 0o4755|os.ModeSetuid))

	run := func(uid uint32, args ...string) (string, int) {
		cmd := exec.Command(sudo, args...)
		cmd.SysProcAttr = credential(uid)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LD_PRELOAD=/nonexistent.so", "LANG=C.UTF-8"}
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	got, code := run(1000, "-n", "bash", "-c", "id -u; echo $HOME $SUDO_USER $LANG ${LD_PRELOAD:-none}")
	assert.Equal(t, 0, code, got)
	assert.Equal(t, "0\n/root core C.UTF-8 none\n", got)
	got, code = run(1000, "-n", "--", "sh", "-c", "exit 4")
	assert.Equal(t, 4, code, got)
	got, code = run(1001, "-n", "true")
	assert.Equal(t, 1, code)
	assert.Contains(t, got, "only core may sudo")
	got, code = run(1000, "-u", "nobody", "true")
	assert.Equal(t, 1, code)
	assert.Contains(t, got, "as root only")
	got, code = run(1000, "-V")
	assert.Equal(t, 0, code)
	assert.Contains(t, got, "stand-in")
}

func credential(uid uint32) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
}
