//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// someonesFiles are what a user may keep in a directory a spec names by
// mistake, under the very names bootlab gives its own lab files.
var someonesFiles = []string{"ssh/sshd_config", "pki/ca.crt", "haproxy/haproxy.cfg", "mydata/notes.txt", "images/disk.img"}

func writeSomeonesFiles(t *testing.T, dir string) {
	t.Helper()
	for _, p := range someonesFiles {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("keep "+p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// assertSomeonesFiles fails unless every file is there as written.
func assertSomeonesFiles(t *testing.T, dir string) {
	t.Helper()
	for _, p := range someonesFiles {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(b) != "keep "+p {
			t.Errorf("%s in %s was touched: %v %q", p, dir, err, b)
		}
	}
}

// The report, on a real host: a spec whose labDir or poolDir
// names a directory holding someone else's files. `lab down` of the lab
// never built there removes nothing, `lab up` is refused before anything
// is made (no libvirt object, no lab state), and the files stay.
func TestForeignDirectoriesAreNeverTouched(t *testing.T) {
	parallel(t)
	t.Run("labDir", func(t *testing.T) {
		l := newLab(t)
		labDir := filepath.Join(l.Dir, "lab")
		writeSomeonesFiles(t, labDir)
		defer os.RemoveAll(labDir)

		r := mustRun(t, "lab", "down", "-f", l.SpecFile)
		if !strings.Contains(r.Stderr+r.Stdout, "nothing to delete") {
			t.Errorf("down of a lab never built must say there is nothing to delete:\n%s", r)
		}
		assertSomeonesFiles(t, labDir)

		r = run(t, "lab", "up", "-f", l.SpecFile)
		if r.Code != 3 || !strings.Contains(r.Stderr, "labDir "+labDir+" already holds files bootlab did not make") {
			t.Fatalf("up into someone's labDir: want exit 3 naming labDir:\n%s", r)
		}
		assertSomeonesFiles(t, labDir)
		if _, err := os.Stat(filepath.Join(labDir, "state.json")); err == nil {
			t.Error("a refused up wrote lab state")
		}
		if left := leftovers(t, l); len(left) > 0 {
			t.Errorf("a refused up made libvirt objects: %v", left)
		}
	})
	t.Run("poolDir", func(t *testing.T) {
		l := newLab(t)
		poolDir := filepath.Join(l.Dir, "pool")
		writeSomeonesFiles(t, poolDir)
		defer os.RemoveAll(poolDir)

		r := run(t, "lab", "up", "-f", l.SpecFile)
		if r.Code != 3 || !strings.Contains(r.Stderr, "storage.poolDir "+poolDir+" already holds files bootlab did not make") {
			t.Fatalf("up into someone's poolDir: want exit 3 naming storage.poolDir:\n%s", r)
		}
		assertSomeonesFiles(t, poolDir)
		if _, err := os.Stat(filepath.Join(l.Dir, "lab")); err == nil {
			t.Error("a refused up created the lab directory")
		}
		if left := leftovers(t, l); len(left) > 0 {
			t.Errorf("a refused up made libvirt objects: %v", left)
		}
		mustRun(t, "lab", "down", "-f", l.SpecFile)
		assertSomeonesFiles(t, poolDir)
	})
}
