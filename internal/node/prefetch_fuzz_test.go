package node

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParsePrefetch feeds parsePrefetch what a node might print for the
// prefetch command: it never panics, and what it accepts answers for every
// file asked, with no more content than the output held.
func FuzzParsePrefetch(f *testing.F) {
	tag := prefetchTag
	f.Add([]byte(tag+" list /d\n"+tag+" name a.done\n"+tag+" exists /f\n/f\t600 3 regular file\n"+tag+" content\nabc\n"+tag+" end\n"), "/f", "/d")
	f.Add([]byte(tag+" missing /d\n"+tag+" content\n\n"+tag+" end\n"), "/f", "/d")
	f.Add([]byte(tag+" notdir /d\n"+tag+" exists /f\n/f\t755 0 regular empty file\n"+tag+" content\n\n"+tag+" end\n"), "/f", "/d")
	f.Add([]byte(tag+" exists /f\n/f\t600 99 regular file\n"+tag+" content\nshort\n"+tag+" end\n"), "/f", "")
	f.Add([]byte(tag+" name orphan\n"+tag+" content\n"), "", "/d")
	f.Fuzz(func(t *testing.T, out []byte, file, dir string) {
		want := Paths{}
		if file != "" {
			want.Files = []string{file}
		}
		if dir != "" {
			want.Dirs = []string{dir}
		}
		files, dirs, ok := parsePrefetch(out, want)
		if !ok {
			return
		}
		for _, p := range want.Files {
			pf, found := files[p]
			if !found {
				t.Fatalf("accepted an output without %q", p)
			}
			if int64(len(pf.data)) > int64(len(out)) || !bytes.Contains(out, pf.data) {
				t.Fatalf("%q's data is not from the output", p)
			}
		}
		for d, pd := range dirs {
			for _, name := range pd.names {
				if strings.Contains(name, "\n") || !strings.Contains(string(out), name) {
					t.Fatalf("listing of %q has %q, not a line of the output", d, name)
				}
			}
		}
	})
}
