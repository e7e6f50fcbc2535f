package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// hostile is one input a user may hand bootlab by mistake (or on purpose)
// and what bootlab must answer: the exact exit code and a fragment of the
// one error line, before anything is created.
type hostile struct {
	name string
	// file is the spec's content; special, when set, makes the path a FIFO,
	// a directory or a device instead. {{dir}} in file is the test's
	// directory, where FIFOs and directories named by fields are made.
	file    string
	special string
	stdin   string
	// args run with {{spec}} replaced by the spec's path and {{dir}} by
	// the test's directory; env is set the same way.
	args []string
	env  map[string]string
	code int
	want string
}

func hostileInputs() []hostile {
	labConfig := []string{"lab", "config", "-f", "{{spec}}"}
	upDryRun := []string{"lab", "up", "--dry-run", "-f", "{{spec}}"}
	classConfig := []string{"class", "config", "-f", "{{spec}}"}
	openshift := "name: h21in-hostile\nprofile: openshift\n"
	return []hostile{
		// Special files as the spec itself (-f).
		{name: "FIFO as -f", special: "fifo", args: labConfig, code: cmdutil.ExitInvalid, want: "is a FIFO (named pipe), not a regular file: give the path of a regular file"},
		{name: "directory as -f", special: "dir", args: upDryRun, code: cmdutil.ExitInvalid, want: "is a directory, not a regular file"},
		{name: "/dev/zero as -f", special: "/dev/zero", args: labConfig, code: cmdutil.ExitInvalid, want: "/dev/zero: is a character device, not a regular file"},
		{name: "oversized -f", file: "name: big\n" + strings.Repeat("# padding\n", 110000), args: labConfig, code: cmdutil.ExitInvalid, want: "is larger than 1024 KiB"},
		{name: "FIFO as class -f", special: "fifo", args: classConfig, code: cmdutil.ExitInvalid, want: "(file): is a FIFO (named pipe), not a regular file"},
		{name: "directory as class -f", special: "dir", args: classConfig, code: cmdutil.ExitInvalid, want: "(file): is a directory, not a regular file"},
		// Special files named by fields.
		{name: "/dev/zero as pull secret", file: openshift + "openshift: {pullSecretFile: /dev/zero}\n", args: upDryRun, code: cmdutil.ExitInvalid, want: "openshift.pullSecretFile: /dev/zero: is a character device, not a regular file"},
		{name: "FIFO as pull secret", file: openshift + "openshift: {pullSecretFile: {{dir}}/fifo}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "openshift.pullSecretFile: {{dir}}/fifo: is a FIFO (named pipe)"},
		{name: "directory as SSH key", file: openshift + "openshift: {pullSecretFile: {{dir}}/ps.json, sshPublicKeyFile: {{dir}}}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "openshift.sshPublicKeyFile: {{dir}}: is a directory, not a regular file"},
		{name: "FIFO as image.path", file: "name: h21in-hostile\nimage: {path: {{dir}}/fifo}\n", args: upDryRun, code: cmdutil.ExitInvalid, want: "image.path: base image {{dir}}/fifo: is a FIFO (named pipe), not a regular file"},
		{name: "device as image.kernel", file: "name: h21in-hostile\nimage: {kernel: /dev/null, initrd: {{dir}}/ps.json}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "image.kernel: kernel /dev/null: is a character device"},
		// YAML traps.
		{name: "YAML 1.1 boolean", file: "name: h21in-hostile\ncluster: {name: no}\n", args: labConfig, code: cmdutil.ExitInvalid, want: `cluster.name: no is read by YAML as the boolean false, not the text "no" (line 2): quote it: name: "no"`},
		{name: "float version", file: "name: h21in-hostile\nopenshift:\n  version: 4.20\n", args: upDryRun, code: cmdutil.ExitInvalid, want: `openshift.version: 4.20 is read by YAML as a number, which drops what makes it text (4.20 becomes 4.2) (line 3): quote it: version: "4.20"`},
		{name: "second document", file: "name: a\n---\nname: b\n", args: labConfig, code: cmdutil.ExitInvalid, want: "(file): holds a second YAML document (after the '---' before line 3)"},
		{name: "empty file", file: "", args: upDryRun, code: cmdutil.ExitInvalid, want: "(file): is empty (or only comments): write a lab spec"},
		{name: "only comments", file: "# my lab\n", args: labConfig, code: cmdutil.ExitInvalid, want: "(file): is empty (or only comments)"},
		{name: "tab indentation", file: "name: a\ncluster:\n\tname: b\n", args: labConfig, code: cmdutil.ExitInvalid, want: "(file): line 3 is indented with a tab: YAML indents with spaces only"},
		{name: "trap on stdin", stdin: "cluster: {name: off}\n", args: []string{"lab", "config", "-f", "-"}, code: cmdutil.ExitInvalid, want: `standard input (-f -): cluster.name: off is read by YAML as the boolean false`},
		{name: "class YAML trap", file: "name: ws\ntemplate: {openshift: {version: 4.20}}\nlearners: 2\n", args: classConfig, code: cmdutil.ExitInvalid, want: `template.openshift.version: 4.20 is read by YAML as a number`},
		{name: "class empty file", file: "\n", args: classConfig, code: cmdutil.ExitInvalid, want: "(file): is empty (or only comments): write a class spec"},
		// Huge and negative numbers.
		{name: "memoryMiB 2^63-1", file: "name: h21in-hostile\nnodes:\n- {name: bootstrap, role: bootstrap}\n- {name: m0, role: master, memoryMiB: 9223372036854775807}\n", args: upDryRun, code: cmdutil.ExitInvalid, want: "nodes[1].memoryMiB: 9223372036854775807 MiB is more than any lab host has: use at most 1048576"},
		{name: "negative disk", file: "name: h21in-hostile\nnodes:\n- {name: bootstrap, role: bootstrap, diskGiB: -5}\n- {name: m0, role: master}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "nodes[0].diskGiB: -5 GiB is below the probe profile's floor"},
		{name: "masters 2^63-1", file: "name: h21in-hostile\ntopology: {masters: 9223372036854775807, workers: 1}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "topology.masters: 9223372036854775807: a lab holds at most 250 nodes in all"},
		{name: "negative workers", file: "name: h21in-hostile\ntopology: {masters: 1, workers: -1}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "topology.workers: -1: must be 0 or more"},
		{name: "number too large for YAML", file: "name: h21in-hostile\ntopology: {masters: 99999999999999999999}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "topology.masters: want a whole number"},
		{name: "bridge with a slash", file: "name: h21in-hostile\nnetwork: {bridge: br/0}\n", args: upDryRun, code: cmdutil.ExitInvalid, want: `network.bridge: "br/0" holds a character Linux or bootlab refuses`},
		{name: "bridge ..", file: "name: h21in-hostile\nnetwork: {bridge: \"..\"}\n", args: labConfig, code: cmdutil.ExitInvalid, want: `network.bridge: ".." is not a name`},
		{name: "bridge of 16 bytes", file: "name: h21in-hostile\nnetwork: {bridge: bootlab-abcdefgh}\n", args: labConfig, code: cmdutil.ExitInvalid, want: "is 16 bytes, more than 15"},
		{name: "a /8 network", file: "name: h21in-hostile\nnetwork: {cidr: 10.0.0.0/8}\n", args: upDryRun, code: cmdutil.ExitInvalid, want: `network.cidr: "10.0.0.0/8" is too large for a lab network: use a /16 to /27`},
		{name: "learners -3", file: "name: ws\ntemplate: {}\nlearners: -3\n", args: classConfig, code: cmdutil.ExitInvalid, want: "learners: -3: give a count of at least 1"},
		{name: "learners 2^63-1", file: "name: ws\ntemplate: {}\nlearners: 9223372036854775807\n", args: classConfig, code: cmdutil.ExitInvalid, want: "learners: 9223372036854775807: a class has at most 1000 learners"},
		// Class overrides.
		{name: "override labDir", file: "name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  alice: {labDir: /etc}\n", args: classConfig, code: cmdutil.ExitInvalid, want: "overrides.alice.labDir: must not be set per learner"},
		{name: "override poolDir", file: "name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  alice: {storage: {poolDir: /var}}\n", args: classConfig, code: cmdutil.ExitInvalid, want: "overrides.alice.storage.poolDir: must not be set per learner"},
		{name: "override bridge eth0", file: "name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  alice: {network: {bridge: eth0}}\n", args: classConfig, code: cmdutil.ExitInvalid, want: "overrides.alice.network.bridge: must not be set per learner: each lab's bridge is derived from its name, and one named here could be another lab's or a host interface such as eth0"},
		{name: "override name", file: "name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  alice: {name: other}\n", args: classConfig, code: cmdutil.ExitInvalid, want: "overrides.alice.name: must not be set per learner"},
		{name: "override of no learner", file: "name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  bob: {}\n", args: classConfig, code: cmdutil.ExitInvalid, want: `overrides.bob: "bob" is not a learner of this class`},
		{name: "override unknown field", file: "name: ws\ntemplate: {}\nlearners: [alice]\noverrides:\n  alice: {topology: {wrokers: 1}}\n", args: classConfig, code: cmdutil.ExitInvalid, want: "overrides.alice.wrokers: unknown field"},
		// Files bootlab reads or writes that are not its own (issue 52).
		{name: "FIFO as --known-hosts", file: "name: h21in-hostile\n", args: []string{"stage", "status", "-f", "{{spec}}", "--host", "127.0.0.1", "--port", "1", "--key", "{{dir}}/ps.json", "--known-hosts", "{{dir}}/fifo"}, code: cmdutil.ExitInvalid, want: "known_hosts {{dir}}/fifo: is a FIFO (named pipe), not a regular file"},
		{name: "FIFO as ?known_hosts=", file: "name: h21in-hostile\nlibvirt: {uri: \"qemu+ssh://root@127.0.0.1:1/system?known_hosts={{dir}}/fifo\"}\n", args: []string{"lab", "status", "-f", "{{spec}}"}, code: cmdutil.ExitInvalid, want: "known_hosts {{dir}}/fifo: is a FIFO (named pipe), not a regular file"},
		{name: "FIFO as cache export FILE", args: []string{"cache", "export", "{{dir}}/fifo", "--force", "--cache-dir", "{{dir}}/cache"}, code: cmdutil.ExitInvalid, want: "export file {{dir}}/fifo: is a FIFO (named pipe), not a regular file"},
		{name: "/etc as BOOTLAB_CACHE", file: "name: h21in-hostile\n", args: upDryRun, env: map[string]string{"BOOTLAB_CACHE": "/etc"}, code: cmdutil.ExitInvalid, want: "BOOTLAB_CACHE: /etc is a top-level system directory"},
		{name: "/dev/null as --cache-dir", args: []string{"cache", "list", "--cache-dir", "/dev/null"}, code: cmdutil.ExitInvalid, want: "--cache-dir: /dev/null is inside /dev"},
	}
}

// Every hostile input is refused within a second, with its exit code and
// error, and leaves nothing behind: no bootlab home, no lab directory, no
// storage pool directory, no file beside the spec.
func TestHostileInputs(t *testing.T) {
	for _, tc := range hostileInputs() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			home := filepath.Join(dir, "home")
			t.Setenv("BOOTLAB_HOME", home)
			t.Setenv(cmdutil.EnvLab, "")
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ps.json"), []byte(`{"auths":{"quay.io":{"auth":"dTpw"}}}`), 0o600))
			path := specPath(t, dir, tc)
			before := listDir(t, dir)

			expand := strings.NewReplacer("{{spec}}", path, "{{dir}}", dir).Replace
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = expand(a)
			}
			for k, v := range tc.env {
				t.Setenv(k, expand(v))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			start := time.Now()
			code := Run(ctx, cmdutil.Streams{In: strings.NewReader(tc.stdin), Out: &out, ErrOut: &errb}, args)
			assert.Less(t, time.Since(start), time.Second, "refused within a second")

			assert.Equal(t, tc.code, code, errb.String())
			assert.Contains(t, errb.String(), strings.ReplaceAll(tc.want, "{{dir}}", dir))
			assert.Equal(t, 1, strings.Count(errb.String(), "ERROR: "), "one error line: %s", errb.String())
			assert.Empty(t, out.String())
			assert.NoDirExists(t, home, "nothing created in the bootlab home")
			assert.NoDirExists(t, "/var/lib/libvirt/images/bootlab-h21in-hostile", "no storage pool directory")
			assert.Equal(t, before, listDir(t, dir), "nothing created beside the spec")
		})
	}
}

// specPath makes the spec tc names in dir and returns its path.
func specPath(t *testing.T, dir string, tc hostile) string {
	t.Helper()
	switch tc.special {
	case "fifo":
		return filepath.Join(dir, "fifo")
	case "dir":
		return dir
	case "":
		p := filepath.Join(dir, "spec.yaml")
		require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(tc.file, "{{dir}}", dir)), 0o600))
		return p
	}
	return tc.special
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		names = append(names, p)
		return err
	}))
	return names
}

// -f - on a terminal (or pipe) nobody writes to gives way to Ctrl-C or
// SIGTERM (both cancel the context Main makes): exit 130 at once, for
// labs and classes.
func TestStdinSpecEndsOnInterrupt(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", filepath.Join(t.TempDir(), "home"))
	for _, args := range [][]string{{"lab", "config", "-f", "-"}, {"class", "config", "-f", "-"}} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel) // what the signal does
		var out, errb bytes.Buffer
		start := time.Now()
		code := Run(ctx, cmdutil.Streams{In: r, Out: &out, ErrOut: &errb}, args)
		cancel()
		assert.Less(t, time.Since(start), time.Second, "%v", args)
		assert.Equal(t, cmdutil.ExitInterrupted, code, "%v: %s", args, errb.String())
		assert.Contains(t, errb.String(), "interrupted")
		w.Close()
		r.Close()
	}
}
