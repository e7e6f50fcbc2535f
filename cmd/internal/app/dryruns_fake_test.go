package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/spec"
)

// The dry runs of issue 52, item 8 (stage reset, lab pivot, class up):
// each prints what it would change, or refuses as the command does, with
// its exit code, and changes nothing: the bootlab home's files as they
// were, no libvirt call that changes anything.
func TestNewDryRunsChangeNothing(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	hv := fake.New()
	hv.Caps = hypervisor.Capabilities{} // the test driver: no load balancer
	completionLab(t, hv, "c52", "", "10.152.0.0/24", "before-07")
	rehearsal := &spec.Spec{Name: "r52", Network: spec.Network{CIDR: "10.152.3.0/24"}}
	rehearsal.OpenShift.ManualBootstrap = true
	buildLab(t, hv, rehearsal, "", "before-07")
	classDir := t.TempDir()
	class := filepath.Join(classDir, "class.yaml")
	require.NoError(t, os.WriteFile(class, []byte("name: it\ntemplate:\n  profile: probe\n  accelerator: tcg\n  libvirt: {uri: \"test:///default\"}\n  topology: {masters: 1, workers: 0}\nlearners: [ann]\naddressPool: 10.231.0.0/22\n"), 0o644))

	for _, c := range []struct {
		name    string
		args    []string
		code    int
		out     []string
		errLine string
	}{
		{name: "lab pivot", args: []string{"lab", "pivot", "--dry-run", "--name", "c52"},
			out: []string{"lab pivot would make these changes to lab c52 (nothing was changed):\n  update    labDir       " + filepath.Join(home, "labs", "c52", "state.json") + " (the bootstrap is out of the load balancer)\n"}},
		{name: "lab pivot of no lab", args: []string{"lab", "pivot", "--dry-run", "--name", "nosuch"},
			code: cmdutil.ExitNoLab, errLine: "ERROR: lab nosuch is not up (no complete `lab up` recorded in " + filepath.Join(home, "labs", "nosuch") + "): run `bootlab lab up --name nosuch` first"},
		{name: "stage reset", args: []string{"stage", "reset", "07", "--dry-run", "--name", "r52"},
			out: []string{"stage reset 07 would make these changes to lab r52 (nothing was changed):\n  revert    snapshot     bootlab-r52-"}},
		{name: "stage reset without its checkpoint", args: []string{"stage", "reset", "08", "--dry-run", "--name", "r52"},
			code: cmdutil.ExitError, errLine: "ERROR: lab r52 has no checkpoint before-08: `bootlab stage run --name r52` takes it before the stage when the stage runs first in a run; it has before-07 (`bootlab stage reset NN --name r52` for one of them)"},
		{name: "stage reset of a probe lab", args: []string{"stage", "reset", "07", "--dry-run", "--name", "c52"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: lab c52 is a probe lab built without manual bootstrap: it runs no stages, so it has no before-NN checkpoints (`bootlab lab checkpoint --name c52` saves and restores its nodes)"},
		{name: "class up", args: []string{"class", "up", "-f", class, "--dry-run"},
			out: []string{"class up would make these changes to lab it-ann (learner ann; nothing was changed):\n", "  define    network      bootlab-it-ann\n", "  update    classDir     " + filepath.Join(home, "classes", "it", "handouts", "ann") + " (handout)\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hv.Reset()
			before := testutil.Tree(t, home, classDir)
			code, out, errOut := runOn(t, hv, c.args...)
			assert.Equal(t, c.code, code, errOut)
			for _, w := range c.out {
				assert.Contains(t, out, w)
			}
			if c.errLine != "" {
				assert.Equal(t, []string{c.errLine}, errorLines(errOut))
			}
			assert.Empty(t, hv.Mutations(), "nothing changed in libvirt")
			assert.Equal(t, before, testutil.Tree(t, home, classDir), "nothing created, nothing changed")
		})
	}
}
