package lab

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exportedDecls lists the exported top-level names (not methods) of the
// non-test files matching glob.
func exportedDecls(t *testing.T, glob string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(glob)
	require.NoError(t, err)
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							names[sp.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return names
}

// The facade's re-exports of the spec model are in step with lab/spec:
// an export added there and missing here fails, naming it.
func TestAliasesCoverSpec(t *testing.T) {
	t.Parallel()
	want := exportedDecls(t, filepath.Join("spec", "*.go"))
	got := exportedDecls(t, "spec_aliases.go")
	require.Greater(t, len(want), 40)
	var missing []string
	for n := range want {
		if !got[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "add these lab/spec exports to lab/spec_aliases.go")
}

// The facade's re-exports of the hypervisor port are in step with
// lab/hypervisor. The per-resource interfaces are new with the port and
// are not re-exported: code that needs only volumes imports lab/hypervisor.
func TestAliasesCoverHypervisor(t *testing.T) {
	t.Parallel()
	want := exportedDecls(t, filepath.Join("hypervisor", "*.go"))
	got := exportedDecls(t, "hypervisor_aliases.go")
	for _, n := range []string{"Machine", "Networks", "Pools", "Volumes", "Domains", "Snapshots"} {
		require.True(t, want[n], "lab/hypervisor no longer exports %s: update this test", n)
		delete(want, n)
	}
	var missing []string
	for n := range want {
		if !got[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "add these lab/hypervisor exports to lab/hypervisor_aliases.go")
	assert.True(t, got["Hypervisor"] && got["ErrNotFound"], "the test reads the aliases file")
}
