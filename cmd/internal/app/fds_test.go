package app

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A descriptor bootlab inherited (flock(1)'s lock, here a pipe at fd 3)
// does not reach the programs bootlab starts: the test runs itself with
// one, and the child asks a bash it starts whether fd 3 is open there.
func TestInheritedDescriptorsStayWithBootlab(t *testing.T) {
	if os.Getenv("BOOTLAB_APP_TEST_FD_CHILD") != "" {
		if os.Getenv("BOOTLAB_APP_TEST_FD_CHILD") == "mark" {
			closeOnExecInherited()
		}
		out, err := exec.Command("bash", "-c", `[ -e /proc/$$/fd/3 ] && echo fd3=open || echo fd3=closed`).Output()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(out)
		return
	}
	t.Parallel()
	self, err := os.Executable()
	require.NoError(t, err)
	run := func(mode string) string {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		cmd := exec.Command(self, "-test.run=^TestInheritedDescriptorsStayWithBootlab$")
		cmd.Env = append(os.Environ(), "BOOTLAB_APP_TEST_FD_CHILD="+mode)
		cmd.ExtraFiles = []*os.File{w}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	assert.True(t, strings.Contains(run("keep"), "fd3=open"), "without the marking the child's bash inherits fd 3 (the test can fail)")
	assert.True(t, strings.Contains(run("mark"), "fd3=closed"), "bootlab's children do not inherit fd 3")
}
