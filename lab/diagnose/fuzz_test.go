package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
)

// FuzzReadBundle: no archive, however broken or hostile, panics the
// bundle reader or the diagnosis; a refused one is a *BundleError; what a
// diagnosis prints of a log never holds a control character (a terminal's
// escape).
func FuzzReadBundle(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("..", "..", "testdata", "bundles", "*.tar.gz"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed bundles in testdata/bundles: %v", err)
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("\x1f\x8b"))
	f.Add(rawTar(f, false, "bootstrap/services/bootkube.json", `[{"phase":"service start"},{"phase":"stage end","result":"failure"}]`,
		"bootstrap/journals/bootkube.log", "May 99 10:00:00 x: \x1b[2J", "control-plane/x/journals/kubelet.log", "Feb 30 25:61:61 y"))
	lim := Limits{Archive: 4 << 20, File: 64 << 10, Kept: 1 << 20, Entries: 2000, Certs: 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBundleFrom(context.Background(), bytes.NewReader(data), "fuzz.tar.gz", lim)
		if err != nil {
			var be *BundleError
			if !errors.As(err, &be) {
				t.Fatalf("error is %T, not a *BundleError: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.tar.gz: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		r := Diagnose(b, Options{Now: time.Date(2025, 5, 14, 10, 30, 0, 0, time.UTC)})
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		for _, c := range r.Checks {
			if c.State != Passed && c.State != Failed && c.State != Unknown {
				t.Fatalf("%s has state %q", c.ID, c.State)
			}
			for _, e := range c.Evidence {
				if strings.IndexFunc(e.Text, func(r rune) bool { return unicode.IsControl(r) }) >= 0 {
					t.Fatalf("%s's evidence holds a control character: %q", c.ID, e.Text)
				}
			}
		}
		var out bytes.Buffer
		if err := r.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		_ = r.Picture().SVG()
	})
}
