//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Two labs on one host, as a trainer has them: a command acts only on the
// lab it names, a refused up changes nothing, verify tells the truth about a
// destroyed node, and changing a lab (a definition, its size) converges green.
func TestTwoLabsNeverTheWrongLab(t *testing.T) {
	parallel(t)
	ux1 := newLabWith(t, "topology: {masters: 1, workers: 1}\n")
	ux2 := newLabWith(t, "topology: {masters: 1, workers: 0}\n")
	mustRun(t, "lab", "up", "-f", ux1.SpecFile)
	mustRun(t, "lab", "up", "-f", ux2.SpecFile)
	mustRun(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "5m")
	mustRun(t, "lab", "verify", "-f", ux2.SpecFile, "--timeout", "5m")

	t.Run("a spec copied from another lab is refused and the other lab is untouched", func(t *testing.T) {
		cfg := mustRun(t, "lab", "config", "-f", ux1.SpecFile).Stdout
		other := freeCIDR(t)
		oldNet := strings.TrimSuffix(ux1.CIDR.Addr().String(), "0")
		newNet := strings.TrimSuffix(other.Addr().String(), "0")
		var kept []string
		for _, line := range strings.Split(cfg, "\n") {
			if strings.Contains(line, "bridge:") || strings.Contains(line, "mac:") {
				continue
			}
			kept = append(kept, line)
		}
		copied := strings.ReplaceAll(strings.Join(kept, "\n"), oldNet, newNet)
		copied = regexp.MustCompile(`(?m)^name: .*$`).ReplaceAllString(copied, "name: ux7"+ux1.Name[4:])
		file := filepath.Join(ux1.Dir, "ux7.yaml")
		if err := os.WriteFile(file, []byte(copied), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"down", "status", "verify", "up"} {
			r := run(t, "lab", verb, "-f", file)
			if r.Code != 3 || !strings.Contains(r.Stderr, fmt.Sprintf("belongs to lab %q", ux1.Name)) {
				t.Fatalf("lab %s of a copied spec: want exit 3 naming %s:\n%s", verb, ux1.Name, r)
			}
		}
		if left := leftovers(t, ux1); len(left) < 4 {
			t.Fatalf("ux1 lost objects: %v", left)
		}
		mustRun(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "2m")
	})

	t.Run("a refused up leaves the state and verify as they were", func(t *testing.T) {
		r := run(t, "lab", "up", "-f", ux2.SpecFile, "--cidr", freeCIDR(t).String())
		if r.Code == 0 || !strings.Contains(r.Stderr, "cannot change in place") {
			t.Fatalf("a new CIDR must be refused:\n%s", r)
		}
		state, err := os.ReadFile(filepath.Join(ux2.Dir, "lab", "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(state), ux2.CIDR.String()) {
			t.Fatalf("state no longer records the lab's CIDR %s:\n%s", ux2.CIDR, state)
		}
		mustRun(t, "lab", "verify", "-f", ux2.SpecFile, "--timeout", "1m")
	})

	t.Run("verify names a destroyed node instead of trusting its old reports", func(t *testing.T) {
		dom := "bootlab-" + ux1.Name + "-worker-0"
		if out, err := virsh(t, "destroy", dom); err != nil {
			t.Fatalf("virsh destroy %s: %v %s", dom, err, out)
		}
		r := run(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "0")
		if r.Code != 4 || !strings.Contains(r.Stdout, "worker-0 is shut off") {
			t.Fatalf("want exit 4 and 'worker-0 is shut off':\n%s", r)
		}
		mustRun(t, "lab", "up", "-f", ux1.SpecFile)
		mustRun(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "5m")
	})

	t.Run("a changed definition converges with the domains' UUIDs kept", func(t *testing.T) {
		before, _ := virsh(t, "domuuid", "bootlab-"+ux2.Name+"-master-0")
		spec, err := os.ReadFile(ux2.SpecFile)
		if err != nil {
			t.Fatal(err)
		}
		changed := string(spec) + "image: {cmdline: \"console=ttyS0 panic=-1 quiet loglevel=3\"}\n"
		if err := os.WriteFile(ux2.SpecFile, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		r := mustRun(t, "lab", "up", "-f", ux2.SpecFile)
		if !strings.Contains(r.Stderr, "redefined and restarted") {
			t.Fatalf("up must say what it changed:\n%s", r)
		}
		after, _ := virsh(t, "domuuid", "bootlab-"+ux2.Name+"-master-0")
		if strings.TrimSpace(before) == "" || strings.TrimSpace(before) != strings.TrimSpace(after) {
			t.Fatalf("the domain's UUID changed: %q -> %q", before, after)
		}
		mustRun(t, "lab", "verify", "-f", ux2.SpecFile, "--timeout", "5m")
	})

	t.Run("scaling up and down converges green", func(t *testing.T) {
		mustRun(t, "lab", "up", "-f", ux1.SpecFile, "--workers", "2")
		mustRun(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "5m")
		mustRun(t, "lab", "up", "-f", ux1.SpecFile, "--workers", "1")
		if out, _ := virsh(t, "list", "--all", "--name"); strings.Contains(out, "bootlab-"+ux1.Name+"-worker-1") {
			t.Fatalf("worker-1 is still defined after scaling down:\n%s", out)
		}
		mustRun(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "5m")
	})

	t.Run("down of one lab leaves the other green", func(t *testing.T) {
		labDown(t, ux2.LabDir, "-f", ux2.SpecFile)
		if left := leftovers(t, ux2); len(left) > 0 {
			t.Fatalf("ux2 left: %v", left)
		}
		mustRun(t, "lab", "verify", "-f", ux1.SpecFile, "--timeout", "1m")
	})
}
