package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Tree records every path under the roots with its mode, size, modification
// time and a digest of its content: equal trees mean nothing was made,
// removed, written or touched there. A root that does not exist is empty.
func Tree(t testing.TB, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if os.IsNotExist(err) && p == root {
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			sum := ""
			if fi.Mode().IsRegular() {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				h := sha256.Sum256(data)
				sum = hex.EncodeToString(h[:8])
			}
			out[p] = fmt.Sprintf("%v %d %d %s", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
			return nil
		})
		if err != nil {
			t.Fatalf("snapshot %s: %v", root, err)
		}
	}
	return out
}
