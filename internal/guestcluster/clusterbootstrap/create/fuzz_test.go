package create

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: any bytes give objects with an apiVersion, a kind and a name
// that survive a JSON round trip, or an error; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\ndata: {k: v}\n",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`,
		"---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n# c\n---\napiVersion: a/v1\nkind: K\nmetadata: {name: n}\n",
		"", "---", "- 1", "kind: [", "apiVersion: v1\nkind: X\nmetadata: {name: \"a/b\"}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Parse("fuzz.yaml", data)
		if err != nil {
			if len(ms) != 0 {
				t.Fatalf("error %v with %d objects", err, len(ms))
			}
			return
		}
		if len(ms) == 0 {
			t.Fatal("no error and no object")
		}
		for _, m := range ms {
			if m.APIVersion == "" || m.Kind == "" || m.Name == "" || strings.Contains(m.Name, "/") {
				t.Fatalf("accepted %+v", m)
			}
			js, err := json.Marshal(m.Object)
			if err != nil {
				t.Fatalf("object does not marshal: %v", err)
			}
			var back map[string]any
			if err := json.Unmarshal(js, &back); err != nil || back["kind"] != m.Kind {
				t.Fatalf("round trip: %v %v", err, back["kind"])
			}
		}
	})
}
