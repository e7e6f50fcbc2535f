// Package testutil holds helpers shared by bootlab's tests.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// IgnitionValidateInstall is how to get the upstream Ignition validate tool.
const IgnitionValidateInstall = "go install github.com/coreos/ignition/v2/validate@v2.24.0 (or make tools)"

// IgnitionValidate runs the upstream Ignition `validate` tool on the file at
// path and fails the test with its output when it rejects the file. The tool
// is looked up on PATH (make puts _output/tools there), then in ~/go/bin; a
// missing tool fails the test with the command that installs it.
func IgnitionValidate(t testing.TB, path string) {
	t.Helper()
	if out, err := exec.Command(IgnitionValidateTool(t), path).CombinedOutput(); err != nil {
		t.Errorf("ignition validate %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// IgnitionValidateTool returns the path of the upstream validate tool.
func IgnitionValidateTool(t testing.TB) string {
	t.Helper()
	tool, err := exec.LookPath("validate")
	if err == nil {
		return tool
	}
	home, _ := os.UserHomeDir()
	tool = filepath.Join(home, "go", "bin", "validate")
	if _, err := os.Stat(tool); err != nil {
		t.Fatalf("Ignition's validate tool is needed: %s", IgnitionValidateInstall)
	}
	return tool
}
