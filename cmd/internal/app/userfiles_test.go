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
	"github.com/bootlab/bootlab/internal/testutil"
)

// userFileCase is a file bootlab writes or reads that is not its own
// (issue 52, item 3): the exact error line (or output) and exit code, and
// the test's directory exactly as it was afterwards: the existing file's
// bytes unchanged, no temporary file left, nothing made.
type userFileCase struct {
	name string
	// args and env run with {{dir}} replaced by the test's directory,
	// which holds ps.json (a pull secret), fifo (a FIFO) and cache/ (a
	// cache root with one probe kernel).
	args []string
	env  map[string]string
	code int
	// errLine is stderr's one ERROR line, exactly; out is stdout, exactly.
	errLine, out string
}

// cacheRootTail ends every refusal of a cache root.
const cacheRootTail = "bootlab lists and hashes everything under the cache root, and writes and removes files there; give it a directory of its own, or leave it unset for the default"

func userFileCases() []userFileCase {
	return []userFileCase{
		{name: "cache export over a pull secret", args: []string{"cache", "export", "{{dir}}/ps.json", "--cache-dir", "{{dir}}/cache"},
			code: cmdutil.ExitUsage, errLine: "ERROR: export file {{dir}}/ps.json: exists, and is kept: give another path, or --force to replace it"},
		{name: "cache export over a FIFO", args: []string{"cache", "export", "{{dir}}/fifo", "--cache-dir", "{{dir}}/cache"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: export file {{dir}}/fifo: is a FIFO (named pipe), not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"},
		{name: "cache export --force over a FIFO", args: []string{"cache", "export", "{{dir}}/fifo", "--force", "--cache-dir", "{{dir}}/cache"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: export file {{dir}}/fifo: is a FIFO (named pipe), not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"},
		{name: "cache export --force over /dev/null", args: []string{"cache", "export", "/dev/null", "--force", "--cache-dir", "{{dir}}/cache"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: export file /dev/null: is a character device, not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"},
		// The cache root gets labDir's system-directory rules.
		{name: "--cache-dir /etc", args: []string{"cache", "list", "--cache-dir", "/etc"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: --cache-dir: /etc is a top-level system directory: " + cacheRootTail},
		{name: "BOOTLAB_CACHE=/etc", args: []string{"cache", "list"}, env: map[string]string{"BOOTLAB_CACHE": "/etc"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: BOOTLAB_CACHE: /etc is a top-level system directory: " + cacheRootTail},
		{name: "BOOTLAB_CACHE=/dev/null", args: []string{"cache", "prune"}, env: map[string]string{"BOOTLAB_CACHE": "/dev/null"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: BOOTLAB_CACHE: /dev/null is inside /dev, which belongs to the operating system: " + cacheRootTail},
		{name: "a pull secret as --cache-dir", args: []string{"cache", "import", "{{dir}}/ps.json", "--cache-dir", "{{dir}}/ps.json"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: --cache-dir: {{dir}}/ps.json is not a directory: " + cacheRootTail},
		{name: "BOOTLAB_CACHE=/etc refuses lab up --dry-run", args: []string{"lab", "up", "--dry-run", "--name", "c52", "--uri", "test:///default"}, env: map[string]string{"BOOTLAB_CACHE": "/etc"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: BOOTLAB_CACHE: /etc is a top-level system directory: " + cacheRootTail},
		// A known_hosts file is a user's file: refused at once when special,
		// never made outside bootlab's own directories.
		{name: "--known-hosts FIFO", args: []string{"stage", "status", "--host", "127.0.0.1", "--port", "1", "--key", "{{dir}}/ps.json", "--known-hosts", "{{dir}}/fifo"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: known_hosts {{dir}}/fifo: is a FIFO (named pipe), not a regular file: give the path of a regular file"},
		{name: "--known-hosts missing", args: []string{"stage", "status", "--host", "127.0.0.1", "--port", "1", "--key", "{{dir}}/ps.json", "--known-hosts", "{{dir}}/ssh/known_hosts"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: known_hosts {{dir}}/ssh/known_hosts: not found: bootlab records host keys in a known_hosts file it did not make only when the file exists; create it (touch {{dir}}/ssh/known_hosts) or name another"},
		{name: "?known_hosts= FIFO", args: []string{"lab", "status", "--name", "k52", "--uri", "qemu+ssh://root@127.0.0.1:1/system?known_hosts={{dir}}/fifo"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: libvirt URI qemu+ssh://root@127.0.0.1:1/system?known_hosts={{dir}}/fifo: known_hosts {{dir}}/fifo: is a FIFO (named pipe), not a regular file: give the path of a regular file"},
		// lab graph --out replaces a regular file, never a FIFO.
		{name: "lab graph --out FIFO", args: []string{"lab", "graph", "--name", "g52", "--out", "{{dir}}/fifo"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: --out {{dir}}/fifo: is a FIFO (named pipe), not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"},
		// lab diagnose reads a log bundle: a FIFO is refused at once, and a
		// file that is no bundle is never read aloud.
		{name: "lab diagnose --bundle FIFO", args: []string{"lab", "diagnose", "--bundle", "{{dir}}/fifo"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: --bundle {{dir}}/fifo: is a FIFO (named pipe), not a regular file: give the path of a regular file"},
		{name: "lab diagnose --bundle a pull secret", args: []string{"lab", "diagnose", "--bundle", "{{dir}}/ps.json"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: --bundle {{dir}}/ps.json: is neither a .tar.gz nor a .tar (its content is not shown): a log bundle is the log-bundle-<id>.tar.gz that `bootlab lab gather` or `openshift-install gather bootstrap` writes"},
		// lab init writes a new file, or standard output for -f -.
		{name: "lab init -f - writes to stdout", args: []string{"lab", "init", "--name", "ux9", "-f", "-"},
			code: cmdutil.ExitOK, out: initSpecOf("ux9")},
		{name: "lab init over a pull secret", args: []string{"lab", "init", "-f", "{{dir}}/ps.json"},
			code: cmdutil.ExitUsage, errLine: "ERROR: write lab spec {{dir}}/ps.json: exists, and is kept: give another path, or --force to replace it"},
		{name: "lab init --force over a FIFO", args: []string{"lab", "init", "--force", "-f", "{{dir}}/fifo"},
			code: cmdutil.ExitInvalid, errLine: "ERROR: write lab spec {{dir}}/fifo: is a FIFO (named pipe), not a regular file: bootlab writes its output to a new file or over a regular one only; give another path"},
	}
}

// initSpecOf is what `lab init --name name` writes, read from the README's
// copy of it (TestReadmeShowsWhatInitWrites keeps that one exact).
func initSpecOf(name string) string {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		panic(err)
	}
	_, after, _ := strings.Cut(string(readme), "`bootlab lab init --name demo` writes")
	_, block, _ := strings.Cut(after, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	return strings.Replace(block, "\nname: demo\n", "\nname: "+name+"\n", 1)
}

func TestFilesThatAreNotBootlabsOwn(t *testing.T) {
	for _, tc := range userFileCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("BOOTLAB_HOME", filepath.Join(dir, "home"))
			t.Setenv(cmdutil.EnvLab, "")
			t.Setenv("BOOTLAB_CACHE", filepath.Join(dir, "cache"))
			t.Chdir(dir)
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ps.json"), []byte(`{"auths":{"quay.io":{"auth":"dTpw"}}}`), 0o600))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "cache", "probe", "0123456789abcdef"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cache", "probe", "0123456789abcdef", "vmlinuz"), []byte("kernel"), 0o644))
			expand := strings.NewReplacer("{{dir}}", dir).Replace
			for k, v := range tc.env {
				t.Setenv(k, expand(v))
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = expand(a)
			}
			before := testutil.Tree(t, dir)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			start := time.Now()
			code := Run(ctx, cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, args)
			assert.Less(t, time.Since(start), 2*time.Second, "answered at once, never waiting on a FIFO")

			assert.Equal(t, tc.code, code, errb.String())
			if tc.errLine != "" {
				assert.Equal(t, []string{expand(tc.errLine)}, errorLines(errb.String()), "one error line, exactly: %s", errb.String())
			}
			assert.Equal(t, expand(tc.out), out.String())
			assert.Equal(t, before, testutil.Tree(t, dir), "nothing created, nothing changed")
		})
	}
}

// errorLines are the ERROR lines of stderr.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "ERROR: ") {
			out = append(out, l)
		}
	}
	return out
}
