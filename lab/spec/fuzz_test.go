package spec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// addFiles seeds f with every file matching pattern (the real fixtures).
func addFiles(f *testing.F, pattern string) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed fixtures match %s: %v", pattern, err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzParseValidate: no lab spec, however broken, panics the parser,
// Defaults, Validate or Marshal; a refused one is a *ValidationError.
func FuzzParseValidate(f *testing.F) {
	addFiles(f, filepath.Join(specDir, "*.yaml"))
	f.Add([]byte("cluster: {name: no}\nopenshift: {version: 4.20}\n"))
	f.Add([]byte("topology: {masters: 9223372036854775807, workers: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse error is %T, not a *ValidationError: %v", err, err)
			}
			return
		}
		s.Defaults()
		if err := s.Validate(); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate error is %T, not a *ValidationError: %v", err, err)
			}
			return
		}
		if _, err := s.Marshal(); err != nil {
			t.Fatalf("a valid spec does not marshal: %v", err)
		}
	})
}

// FuzzCheckPullSecret: any bytes as a pull secret get a verdict, never a
// panic, and an accepted one is compact JSON.
func FuzzCheckPullSecret(f *testing.F) {
	addFiles(f, filepath.Join(specDir, "images", "pull-secret*.json"))
	f.Add([]byte(`{"auths":{"r":{"auth":"dTpw"}}}`))
	f.Add([]byte(`{"auths":{"r":{"auth":123}}}`))
	f.Add([]byte(`{"auths":{"r":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		compact, err := CheckPullSecret(data)
		if err == nil && compact == "" {
			t.Fatal("an accepted pull secret came back empty")
		}
	})
}
