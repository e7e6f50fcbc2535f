package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// facadeAliases are the type aliases of another package's types (`type X
// = pkg.Y`) package lab declared when this guard came in. The facade is
// meant to own what it shows: an alias makes every export of the aliased
// package part of lab's surface, and a list of them only grows (issue 23
// deleted 74 of lab/spec and lab/hypervisor, then lab/reach.go's of
// lab/labdir and lab/cluster). These remain because the commands cannot
// import lab/internal/engine and the verbs take and return its values;
// each goes when the facade takes a type of its own. The list may only
// shrink.
var facadeAliases = []string{
	"BackendStatus = loadbalancer.BackendStatus",
	"BuildOptions = engine.BuildOptions",
	"BuildPlan = engine.BuildPlan",
	"BuildResult = engine.BuildResult",
	"BuiltProgram = engine.BuiltProgram",
	"CSRReview = cluster.CSRReview",
	"Change = engine.Change",
	"Checkpoint = engine.Checkpoint",
	"Connector = hypervisor.Connector",
	"ConsoleOptions = engine.ConsoleOptions",
	"DNSRecord = engine.DNSRecord",
	"DownOptions = engine.DownOptions",
	"GraphOptions = engine.GraphOptions",
	"InputError = engine.InputError",
	"ListOptions = engine.ListOptions",
	"NetworkStatus = engine.NetworkStatus",
	"NodeStatus = engine.NodeStatus",
	"PivotResult = engine.PivotResult",
	"PreflightReport = preflight.Report",
	"PrepareOptions = engine.PrepareOptions",
	"ProbeImage = probe.Image",
	"Program = engine.Program",
	"RestoreOptions = engine.RestoreOptions",
	"SaveOptions = engine.SaveOptions",
	"Status = engine.Status",
	"StepResult = engine.StepResult",
	"Summary = engine.Summary",
	"TeardownOptions = engine.TeardownOptions",
	"UnknownProgramError = engine.UnknownProgramError",
	"UnknownReleaseError = engine.UnknownReleaseError",
	"UpOptions = engine.UpOptions",
	"UpResult = engine.UpResult",
	"WaitOptions = engine.WaitOptions",
}

// packageAliases are the aliases of other packages' types declared in
// the Go files of dir (tests excluded), as "X = pkg.Y".
func packageAliases(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			out = append(out, aliasesOf(d)...)
		}
	}
	sort.Strings(out)
	return out
}

// aliasesOf are the aliases of qualified types (pkg.Y, *pkg.Y, []pkg.Y,
// pkg.Y[T]) a declaration makes.
func aliasesOf(d ast.Decl) []string {
	g, ok := d.(*ast.GenDecl)
	if !ok || g.Tok != token.TYPE {
		return nil
	}
	var out []string
	for _, s := range g.Specs {
		ts := s.(*ast.TypeSpec)
		if !ts.Assign.IsValid() {
			continue
		}
		if q := qualified(ts.Type); q != "" {
			out = append(out, fmt.Sprintf("%s = %s", ts.Name.Name, q))
		}
	}
	return out
}

// qualified is the pkg.Y a type expression names ("" for a local type).
func qualified(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + x.Sel.Name
		}
	case *ast.StarExpr:
		return qualified(x.X)
	case *ast.ArrayType:
		return qualified(x.Elt)
	case *ast.IndexExpr:
		return qualified(x.X)
	case *ast.IndexListExpr:
		return qualified(x.X)
	}
	return ""
}

// The facade owns its names: package lab declares no alias of another
// package's type beyond facadeAliases (callers name the model through
// lab/spec, and a verb's value through a method or a type of lab's own).
func TestFacadeDeclaresNoNewAliases(t *testing.T) {
	t.Parallel()
	got := packageAliases(t, filepath.Join("..", "..", "lab"))
	if len(got) == 0 {
		t.Fatal("found no alias in package lab: is the path right?")
	}
	allowed := map[string]bool{}
	for _, a := range facadeAliases {
		allowed[a] = true
	}
	for _, a := range got {
		if !allowed[a] {
			t.Errorf("package lab declares type %s: the facade names its own types; give lab a type or a method instead of re-exporting another package's", a)
		}
		delete(allowed, a)
	}
	reportStale(t, allowed, "package lab no longer declares type %s: remove it from facadeAliases")
}

// The guard sees every form of alias it is meant to catch, and no type
// definition.
func TestAliasesOf(t *testing.T) {
	t.Parallel()
	src := `package lab
type (
	A = labdir.State
	B = *cluster.Net
	C = []spec.Node
	D = x.List[int]
	E labdir.State
	F = local
	G struct{ labdir.VerifyRecord }
)
type H = y.Z
`
	f, err := parser.ParseFile(token.NewFileSet(), "a.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range f.Decls {
		got = append(got, aliasesOf(d)...)
	}
	want := []string{"A = labdir.State", "B = cluster.Net", "C = spec.Node", "D = x.List", "H = y.Z"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("aliases: got %q, want %q", got, want)
	}
}
