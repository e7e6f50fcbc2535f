package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// safetyCase is one input of issue 52 (a file that does not name its lab,
// a target found rather than named, a file that is not a spec, a lab inside
// another) and bootlab's exact answer: exit code, a fragment of the one
// error line, and what must never appear in it.
type safetyCase struct {
	name string
	// files are written in the test's directory before the command;
	// {{dir}} in args and content is that directory, {{home}} the bootlab
	// home and {{top}} the directory holding it.
	files map[string]string
	stdin string
	tty   bool
	args  []string
	code  int
	want  string
	never string
}

func safetyCases() []safetyCase {
	noName := map[string]string{"noname.yaml": "network: {cidr: 10.213.77.0/24}\n"}
	missing := "name: missing: a spec file must name its lab (bootlab never picks one for a file); add a line such as `name: mylab`, or pass --name NAME"
	found := func(verb string) string {
		return verb + ": no lab named (no -f, no ./bootlab.yaml, no --name, no $BOOTLAB_LAB); the one found is lab only52, the only lab on this host ({{home}}/labs/only52): name it (--name only52) or pass --yes when not at a terminal"
	}
	shadow := "root:*:20228:0:99999:7:::\n_apt:*:20228:0:99999:7:::\nalice:$y$j9T$Zq0secrethash:20228:0:99999:7:::\n"
	return []safetyCase{
		// 1. A file without name: is refused, whatever the verb.
		{name: "no name: down --dry-run", files: noName, args: []string{"lab", "down", "--dry-run", "-f", "{{dir}}/noname.yaml"}, code: cmdutil.ExitInvalid, want: "{{dir}}/noname.yaml: " + missing},
		{name: "no name: up --dry-run", files: noName, args: []string{"lab", "up", "--dry-run", "-f", "{{dir}}/noname.yaml"}, code: cmdutil.ExitInvalid, want: missing, never: "lab down"},
		{name: "no name: config", files: noName, args: []string{"lab", "config", "-f", "{{dir}}/noname.yaml"}, code: cmdutil.ExitInvalid, want: missing},
		{name: `name: ""`, files: map[string]string{"e.yaml": "name: \"\"\n"}, args: []string{"lab", "status", "-f", "{{dir}}/e.yaml"}, code: cmdutil.ExitInvalid, want: missing},
		{name: "name: null", files: map[string]string{"n.yaml": "name: null\n"}, args: []string{"lab", "verify", "-f", "{{dir}}/n.yaml"}, code: cmdutil.ExitInvalid, want: missing},
		{name: "no name on stdin", stdin: "network: {cidr: 10.213.77.0/24}\n", args: []string{"lab", "down", "-f", "-"}, code: cmdutil.ExitInvalid, want: "standard input (-f -): " + missing},
		{name: "no name in ./bootlab.yaml", files: map[string]string{"bootlab.yaml": "topology: {masters: 1}\n"}, args: []string{"lab", "down"}, code: cmdutil.ExitInvalid, want: "bootlab.yaml: " + missing},
		// 2. A destructive verb whose lab was found, not named.
		{name: "bare down, not a terminal", args: []string{"lab", "down"}, code: cmdutil.ExitUsage, want: found("lab down")},
		{name: "bare pivot", args: []string{"lab", "pivot"}, code: cmdutil.ExitUsage, want: found("lab pivot")},
		{name: "bare stage reset", args: []string{"stage", "reset", "07"}, code: cmdutil.ExitUsage, want: found("stage reset")},
		{name: "bare checkpoint restore", args: []string{"lab", "checkpoint", "restore", "start"}, code: cmdutil.ExitUsage, want: found("lab checkpoint restore")},
		{name: "bare lab break", args: []string{"lab", "break", "lb-no-bootstrap-mcs"}, code: cmdutil.ExitUsage, want: found("lab break")},
		{name: "bare lab break --undo", args: []string{"lab", "break", "--undo"}, code: cmdutil.ExitUsage, want: found("lab break")},
		{name: "bare checkpoint delete", args: []string{"lab", "checkpoint", "delete", "start"}, code: cmdutil.ExitUsage, want: found("lab checkpoint delete")},
		{name: "bare down at a terminal, answered no", tty: true, stdin: "n\n", args: []string{"lab", "down"}, code: cmdutil.ExitError, want: "not confirmed: nothing deleted or changed"},
		{name: "bare down at a terminal, no answer", tty: true, args: []string{"lab", "down"}, code: cmdutil.ExitError, want: "not confirmed: nothing deleted or changed"},
		// 4. A file that is not a spec is never read aloud.
		{name: "/etc/shadow as a lab spec", files: map[string]string{"shadow": shadow}, args: []string{"lab", "config", "-f", "{{dir}}/shadow"}, code: cmdutil.ExitInvalid, want: "{{dir}}/shadow: (file): the key on line 2 is not a field name (its text is not shown): is this file a lab spec?", never: "_apt"},
		{name: "/etc/shadow as a class spec", files: map[string]string{"shadow": shadow}, args: []string{"class", "config", "-f", "{{dir}}/shadow"}, code: cmdutil.ExitInvalid, want: "is this file a class spec?", never: "_apt"},
		{name: "an anchor's name", files: map[string]string{"a.yaml": "name: a\ncluster: *hunter2\n"}, args: []string{"lab", "config", "-f", "{{dir}}/a.yaml"}, code: cmdutil.ExitInvalid, want: "(file): yaml: unknown anchor '…' referenced: fix the YAML syntax", never: "hunter2"},
		{name: "a key that is a field name is named", files: map[string]string{"t.yaml": "name: t\nnetwrk: {}\n"}, args: []string{"lab", "config", "-f", "{{dir}}/t.yaml"}, code: cmdutil.ExitInvalid, want: `netwrk: unknown field: check its spelling and place against README.md's "The lab spec"`},
		// 5. A lab inside another lab's directories.
		{name: "labDir inside another lab's", files: map[string]string{"in.yaml": "name: inner52\nlabDir: {{home}}/labs/only52/newsub\n"}, args: []string{"lab", "config", "-f", "{{dir}}/in.yaml"}, code: cmdutil.ExitInvalid, want: "labDir: {{home}}/labs/only52/newsub is inside lab only52's lab directory {{home}}/labs/only52: down of either lab would remove the other's files"},
		{name: "poolDir inside another lab's pool", files: map[string]string{"in.yaml": "name: inner52\nstorage: {poolDir: /var/lib/libvirt/images/bootlab-only52/sub}\n"}, args: []string{"lab", "up", "--dry-run", "-f", "{{dir}}/in.yaml"}, code: cmdutil.ExitInvalid, want: "storage.poolDir: /var/lib/libvirt/images/bootlab-only52/sub is inside lab only52's pool directory /var/lib/libvirt/images/bootlab-only52"},
		{name: "labDir holding another lab's", files: map[string]string{"out.yaml": "name: outer52\nlabDir: {{top}}\n"}, args: []string{"lab", "config", "-f", "{{dir}}/out.yaml"}, code: cmdutil.ExitInvalid, want: "labDir: {{top}} is the parent of lab only52's lab directory {{home}}/labs/only52"},
		{name: "poolDir of another lab", files: map[string]string{"same.yaml": "name: same52\nstorage: {poolDir: /var/lib/libvirt/images/bootlab-only52}\n"}, args: []string{"lab", "config", "-f", "{{dir}}/same.yaml"}, code: cmdutil.ExitInvalid, want: "storage.poolDir: /var/lib/libvirt/images/bootlab-only52 is the same directory as lab only52's pool directory"},
		// 7. Hints that do not send the user round in circles.
		{name: "empty file's hint", files: map[string]string{"empty.yaml": ""}, args: []string{"lab", "config", "-f", "{{dir}}/empty.yaml"}, code: cmdutil.ExitInvalid, want: "is empty (or only comments): write a lab spec (`bootlab lab init -f -` prints a small one to start from)", never: "lab config -o yaml"},
	}
}

// Each case through app.Run on a host holding one built lab (only52) and
// the shared fake hypervisor: the exact exit code and message, one error
// line, nothing on stdout, and nothing created or changed in the bootlab
// home or beside the files.
func TestSafety(t *testing.T) {
	for _, tc := range safetyCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			home := filepath.Join(t.TempDir(), "home")
			t.Setenv("BOOTLAB_HOME", home)
			t.Setenv(cmdutil.EnvLab, "")
			t.Chdir(dir)
			s := &spec.Spec{Name: "only52", Libvirt: spec.Libvirt{URI: "test:///default"}}
			s.Defaults()
			require.NoError(t, (&labdir.State{Name: s.Name, UUID: "u-only52", Spec: s}).Save(s.LabDir))
			expand := strings.NewReplacer("{{dir}}", dir, "{{home}}", home, "{{top}}", filepath.Dir(home)).Replace
			for name, content := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(expand(content)), 0o600))
			}
			before := tree(t, dir, home)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = expand(a)
			}
			var out, errb bytes.Buffer
			streams := cmdutil.Streams{In: strings.NewReader(tc.stdin), Out: &out, ErrOut: &errb, InTTY: tc.tty}
			code := execute(context.Background(), streams, args, NewCmdRoot, hypervisor.Shared(fake.New()))

			assert.Equal(t, tc.code, code, errb.String())
			assert.Contains(t, errb.String(), expand(tc.want))
			if tc.never != "" {
				assert.NotContains(t, errb.String(), tc.never)
			}
			assert.Equal(t, 1, strings.Count(errb.String(), "ERROR: "), "one error line: %s", errb.String())
			assert.Empty(t, out.String())
			assert.Equal(t, before, tree(t, dir, home), "nothing created or changed")
		})
	}
}

// A found lab is acted on once the person at the terminal says yes, and
// with --yes off one; a dry run never asks.
func TestFoundLabConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tty   bool
		stdin string
		args  []string
	}{
		{"yes at a terminal", true, "y\n", []string{"lab", "down"}},
		{"--yes off a terminal", false, "", []string{"lab", "down", "--yes"}},
		{"a dry run is not asked", false, "", []string{"lab", "down", "--dry-run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			t.Setenv("BOOTLAB_HOME", home)
			t.Setenv(cmdutil.EnvLab, "")
			t.Chdir(t.TempDir())
			s := &spec.Spec{Name: "only52", Libvirt: spec.Libvirt{URI: "test:///default"}}
			s.Defaults()
			require.NoError(t, (&labdir.State{Name: s.Name, UUID: "u-only52", Spec: s}).Save(s.LabDir))
			var out, errb bytes.Buffer
			streams := cmdutil.Streams{In: strings.NewReader(tc.stdin), Out: &out, ErrOut: &errb, InTTY: tc.tty}
			code := execute(context.Background(), streams, tc.args, NewCmdRoot, hypervisor.Shared(fake.New()))
			require.Equal(t, 0, code, errb.String())
			if tc.tty {
				assert.Contains(t, errb.String(), "lab down would act on lab only52, the only lab on this host ("+s.LabDir+") (found, not named). Go on? [y/N] ")
			} else {
				assert.NotContains(t, errb.String(), "[y/N]")
			}
			if slicesContain(tc.args, "--dry-run") {
				assert.FileExists(t, labdir.StatePath(s.LabDir), "a dry run deletes nothing")
			} else {
				assert.NoDirExists(t, s.LabDir, "confirmed: the lab's files are gone")
			}
		})
	}
}

func slicesContain(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// tree maps every path under the roots to its content's hash (directories
// to ""), to tell that a command created or changed nothing.
func tree(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				out[p] = ""
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[p] = hex.EncodeToString(sum[:])
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

// lab down of a lab that has nothing here says so once, with no step line
// for objects that never existed.
func TestDownOfNothingPrintsNoSteps(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", filepath.Join(t.TempDir(), "home"))
	t.Setenv(cmdutil.EnvLab, "")
	t.Chdir(t.TempDir())
	code, _, errOut := runOn(t, fake.New(), "lab", "down", "--name", "nothing52", "--uri", "test:///default")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "nothing to delete: lab nothing52 has no VMs")
	assert.NotContains(t, errOut, "✓")
	assert.NotContains(t, errOut, "Deleting")
}
