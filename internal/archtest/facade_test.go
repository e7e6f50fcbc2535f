package archtest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// What the commands may import: the facade (lab, with the model lab/spec),
// the siblings with surfaces of their own (lab/class, lab/cache, stages,
// the dashboard), the embedded data (docs, scripts) and the leaf utilities
// under internal/ (packages that import no lab, stages or cmd package).
// A command that needs more gets a method on lab.Lab instead: a verb that
// lives in cmd drifts from its twin (class verify once read a remote
// lab's console logs from the workstation).
var commandImports = []string{"lab", "lab/spec", "lab/class", "lab/cache", "stages", "dashboard", "docs", "scripts"}

// facadeDebt are the edges from the commands past the facade that remain,
// each to be replaced by a method of lab.Lab (or a sibling's surface). The
// list only shrinks: an edge here that no longer exists fails the test, so
// whoever removes one removes it here too. It is empty: the lab directory
// (lab.Open resolves the lab as built; Lab.SSHKey, KnownHosts, StageDir,
// LastVerify; lab.FindLabs, NotUp), the hypervisor host (Lab.Hop, Lab.DialNode) and approve-csrs' review and the
// waits' defaults (Lab.CSRApprover, lab.Default*) are the facade's.
var facadeDebt = []string{}

// The commands go through the facade: cmd/** imports only the packages of
// commandImports, internal/ leaves and each other (cmd/bootlab-probe, the
// guest agent, has its own rule in TestImportArrows).
func TestCommandsImportTheFacade(t *testing.T) {
	t.Parallel()
	pkgs := packages(t)
	leaf := map[string]bool{}
	for _, p := range pkgs {
		if !under(p.ImportPath, "internal") {
			continue
		}
		leaf[p.ImportPath] = true
		for _, imp := range p.Imports {
			if o, ok := strings.CutPrefix(imp, module); ok && under(o, "lab", "stages", "cmd", "dashboard") {
				leaf[p.ImportPath] = false
			}
		}
	}
	allowed := func(o string) bool {
		for _, a := range commandImports {
			if o == a {
				return true
			}
		}
		return under(o, "cmd") || leaf[o]
	}
	debt := map[string]bool{}
	for _, d := range facadeDebt {
		debt[d] = true
	}
	var past []string
	for _, p := range pkgs {
		if !under(p.ImportPath, "cmd") || under(p.ImportPath, "cmd/bootlab-probe") {
			continue
		}
		for _, imp := range p.Imports {
			o, ok := strings.CutPrefix(imp, module)
			if !ok || allowed(o) {
				continue
			}
			edge := fmt.Sprintf("%s -> %s", p.ImportPath, o)
			if debt[edge] {
				delete(debt, edge)
				continue
			}
			past = append(past, edge)
		}
	}
	sort.Strings(past)
	for _, e := range past {
		t.Errorf("%s: the commands import lab, lab/spec, lab/class, lab/cache, stages, the dashboard and internal/ leaves only; add a method to lab.Lab instead", e)
	}
	reportStale(t, debt, "%s is no longer imported: remove it from facadeDebt")
}

// reportStale fails for each entry left of a list that may only shrink
// (in order, so a run reads the same twice): what it allowed is gone, and
// so must the entry be.
func reportStale(t *testing.T, left map[string]bool, format string) {
	t.Helper()
	var gone []string
	for e := range left {
		gone = append(gone, e)
	}
	sort.Strings(gone)
	for _, e := range gone {
		t.Errorf(format, e)
	}
}
