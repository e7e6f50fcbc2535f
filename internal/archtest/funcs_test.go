package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"testing"
)

// maxFuncLines is how long a function may grow, from its func line to its
// closing brace: past it a function is doing several things, which want
// names of their own. It replaced a cap on file length, which was met by
// splitting files verbatim and said nothing about functions.
const maxFuncLines = 80

// longFuncs are the functions over maxFuncLines when the guard came in,
// with their length then. The list may only shrink: a listed function
// may not grow, and one split to maxFuncLines or less leaves the list.
func longFuncs() map[string]int {
	return map[string]int{}
}

// funcName is a function's name as longFuncs lists it: the package's
// directory, the receiver's type (without *) and the name.
func funcName(dir string, fn *ast.FuncDecl) string {
	name := fn.Name.Name
	if fn.Recv != nil && len(fn.Recv.List) == 1 {
		t := fn.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if g, ok := t.(*ast.IndexExpr); ok { // a generic receiver
			t = g.X
		}
		if id, ok := t.(*ast.Ident); ok {
			name = id.Name + "." + name
		}
	}
	return dir + "." + name
}

// No hand-written, non-test function is longer than maxFuncLines, but
// those listed in longFuncs, none of which grew.
func TestFunctionLength(t *testing.T) {
	t.Parallel()
	long := longFuncs()
	seen := map[string]int{}
	goSources(t, func(rel string, data []byte) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, data, 0)
		if err != nil {
			t.Errorf("parse %s: %v", rel, err)
			return
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			n := end - start + 1
			name := funcName(path.Dir(rel), fn)
			seen[name] = max(seen[name], n)
			allowed, listed := long[name]
			switch {
			case !listed && n > maxFuncLines:
				t.Errorf("%s:%d: %s has %d lines (at most %d): split it into named steps", rel, start, name, n, maxFuncLines)
			case listed && n > allowed:
				t.Errorf("%s:%d: %s grew to %d lines (listed at %d in longFuncs, which may only shrink): split it", rel, start, name, n, allowed)
			}
		}
	})
	var stale []string
	for name, allowed := range long {
		switch n, ok := seen[name]; {
		case !ok:
			stale = append(stale, fmt.Sprintf("%s is listed in longFuncs (%d lines) but no longer exists: remove it", name, allowed))
		case n <= maxFuncLines:
			stale = append(stale, fmt.Sprintf("%s has %d lines now, within %d: remove it from longFuncs", name, n, maxFuncLines))
		}
	}
	sort.Strings(stale)
	for _, s := range stale {
		t.Error(s)
	}
}

// No Go file, tests included, has a func init(): what a package needs is
// built by a constructor its caller can see, and tests set their own.
func TestNoInit(t *testing.T) {
	t.Parallel()
	walkGo(t, true, func(rel string, data []byte) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, data, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parse %s: %v", rel, err)
			return
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s:%d: func init(): build it in a constructor (or the test's own setup) instead", rel, fset.Position(fn.Pos()).Line)
			}
		}
	})
}
