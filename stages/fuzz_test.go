package stages_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootlab/bootlab/stages"
)

// FuzzParseBootkube: no script (nor helper beside it) panics the
// bootkube.sh parser; a parsed one has steps.
func FuzzParseBootkube(f *testing.F) {
	scripts, err := filepath.Glob(filepath.Join("..", "testdata", "bootkube", "*", "usr", "local", "bin", "*.sh"))
	if err != nil || len(scripts) == 0 {
		f.Fatalf("no bootkube fixtures: %v", err)
	}
	helper := []byte("f() {\n  record_service_stage_start \"x\"\n}\n")
	for _, p := range scripts {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// Whole scripts take the fuzzer a minute each to minimize: seed it
		// with their blocks instead (each a few guarded steps).
		for _, chunk := range chunks(string(data), 60) {
			f.Add([]byte(chunk), helper)
		}
	}
	f.Add([]byte("if [ ! -f a.done ]; then\n  f\nfi\nf() {\n f\n}\n"), []byte("f() {\n f\n}\n"))
	f.Fuzz(func(t *testing.T, script, helper []byte) {
		start := time.Now()
		b, err := stages.ParseBootkube("bootkube.sh", script, map[string][]byte{"/usr/local/bin/helper.sh": helper})
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("parsing %d+%d bytes took %v", len(script), len(helper), d)
		}
		if err == nil && len(b.Steps) == 0 {
			t.Fatal("a parsed script has no steps")
		}
	})
}

// chunks cuts a script at blank lines into pieces of about n lines.
func chunks(text string, n int) []string {
	var out []string
	var cur []string
	for _, l := range strings.Split(text, "\n") {
		cur = append(cur, l)
		if len(cur) >= n && strings.TrimSpace(l) == "" {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	return append(out, strings.Join(cur, "\n"))
}
