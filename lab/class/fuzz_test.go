package class

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"
)

// FuzzClassParseExpand: no class file panics Parse, Check or Expand (on
// an empty host); a refused one is a *spec.ValidationError.
func FuzzClassParseExpand(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no class fixtures: %v", err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: ws\ntemplate: {}\nlearners: -3\n"))
	f.Add([]byte("name: ws\ntemplate: {}\nlearners: [a]\noverrides: {a: {labDir: /etc}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if err != nil {
			assertValidationError(t, "Parse", err)
			return
		}
		if err := c.Check("fuzz.yaml"); err != nil {
			assertValidationError(t, "Check", err)
		}
		if _, err := Expand(c, "fuzz.yaml", Facts{}); err != nil {
			assertValidationError(t, "Expand", err)
		}
	})
}

func assertValidationError(t *testing.T, what string, err error) {
	t.Helper()
	var ve *spec.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%s error is %T, not a *spec.ValidationError: %v", what, err, err)
	}
}
