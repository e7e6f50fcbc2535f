package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// whereTable returns the paths named (in backquotes) in the "where" column
// of docs/architecture.md's "Where does X live" table.
func whereTable(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Where does X live")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Where does X live" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	var paths []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "what" {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[len(cells)-2], -1) {
			if p := m[1]; strings.Contains(p, "/") && !strings.ContainsAny(p, " (") {
				paths = append(paths, p)
			}
		}
	}
	if len(paths) < 30 {
		t.Fatalf("read only %d paths from the where-does-X-live table", len(paths))
	}
	return paths
}

// The "where does X live" table stays true: every path it names exists
// (NN in a name stands for a stage number), and every package of the
// module is named there, itself or by a file of it, so a new package
// cannot be left off the map.
func TestWhereDoesXLiveIsTrue(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, p := range whereTable(t, root) {
		glob := strings.ReplaceAll(strings.TrimSuffix(p, "/"), "NN", "[0-9][0-9]")
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(glob)))
		if err != nil || len(matches) == 0 {
			t.Errorf("docs/architecture.md names %s, which does not exist: fix the table", p)
			continue
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			rel = filepath.ToSlash(rel)
			if fi, err := os.Stat(m); err == nil && !fi.IsDir() {
				rel = filepath.ToSlash(filepath.Dir(rel))
			}
			named[rel] = true
		}
	}
	for _, p := range packages(t) {
		if !named[p.ImportPath] {
			t.Errorf("package %s is not in docs/architecture.md's where-does-X-live table: add a row (or a path to a row) for it", p.ImportPath)
		}
	}
}
