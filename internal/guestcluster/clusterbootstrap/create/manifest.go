package create

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Manifest is one object of a manifest file.
type Manifest struct {
	// Path is the file, relative to the directory it was loaded from.
	Path string
	// Doc is the object's place among the file's documents (0 for the first).
	Doc int
	// Docs is how many objects the file holds.
	Docs       int
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Object is the object as JSON.
	Object map[string]any
	// SortPath, when set, is the path the create sorts on instead of Path:
	// for bootlab's CRDs, the file name the payload's renders give them in
	// manifests/, where cluster-bootstrap meets them.
	SortPath string
}

func (m Manifest) sortPath() string {
	if m.SortPath != "" {
		return m.SortPath
	}
	return m.Path
}

// Source names the file, and the document when the file holds several.
func (m Manifest) Source() string {
	if m.Docs > 1 {
		return fmt.Sprintf("%s#%d", m.Path, m.Doc+1)
	}
	return m.Path
}

// String is how a learner sees the object: "cluster-config.yaml ConfigMap
// kube-system/cluster-config-v1".
func (m Manifest) String() string {
	if m.Namespace == "" {
		return fmt.Sprintf("%q %s %s", m.Source(), m.Kind, m.Name)
	}
	return fmt.Sprintf("%q %s %s/%s", m.Source(), m.Kind, m.Namespace, m.Name)
}

// IsCRD is true for a CustomResourceDefinition.
func (m Manifest) IsCRD() bool {
	return m.Kind == "CustomResourceDefinition" && strings.HasPrefix(m.APIVersion, "apiextensions.k8s.io/")
}

// LoadError lists every file of a directory that could not be read as
// manifests, with why.
type LoadError struct {
	Dir string
	// Files maps a file (relative to Dir) to its reason.
	Files map[string]error
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d manifest file(s) in %s cannot be created (fix or remove them; nothing was created):", len(e.Files), e.Dir)
	for _, f := range sortedKeys(e.Files) {
		fmt.Fprintf(&b, "\n  %q: %v", f, e.Files[f])
	}
	return b.String()
}

// Load reads every file under dir (directories named .* are skipped, as
// cluster-bootstrap skips them), each a YAML or JSON stream of one or more
// objects, and returns them in the order they are created: see Order. Any
// bad file fails the whole load with a *LoadError naming each bad file, so
// nothing is created from a directory with a broken manifest.
func Load(dir string) ([]Manifest, error) {
	var out []Manifest
	bad := map[string]error{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			bad[rel] = err
			return nil
		}
		ms, err := Parse(rel, data)
		if err != nil {
			bad[rel] = err
			return nil
		}
		out = append(out, ms...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifests in %s: %w", dir, err)
	}
	if len(bad) > 0 {
		return nil, &LoadError{Dir: dir, Files: bad}
	}
	Order(out)
	return out, nil
}

// maxDocs bounds the documents of one file: an installer manifest holds one.
const maxDocs = 1000

// Parse reads one file's objects. Empty documents are skipped; a file with
// no object at all is an error, as in cluster-bootstrap.
func Parse(path string, data []byte) ([]Manifest, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Manifest
	for n := 0; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n+1, err)
		}
		if n >= maxDocs {
			return nil, fmt.Errorf("more than %d documents", maxDocs)
		}
		m, blank, err := parseDoc(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n+1, err)
		}
		if blank {
			continue
		}
		m.Path, m.Doc = path, len(out)
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no object in it (an empty file or only comments)")
	}
	for i := range out {
		out[i].Docs = len(out)
	}
	return out, nil
}

// parseDoc reads one document; blank is true for one of only comments,
// whitespace and separators.
func parseDoc(doc []byte) (m Manifest, blank bool, err error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return Manifest{}, false, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return Manifest{}, true, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil || obj == nil {
		return Manifest{}, false, errors.New("not an object (want apiVersion, kind and metadata at the top)")
	}
	meta, _ := obj["metadata"].(map[string]any)
	for _, f := range []struct {
		name string
		v    any
	}{{"apiVersion", obj["apiVersion"]}, {"kind", obj["kind"]}, {"metadata.name", meta["name"]}, {"metadata.namespace", meta["namespace"]}} {
		if _, ok := f.v.(string); f.v != nil && !ok {
			return Manifest{}, false, fmt.Errorf("%s is %v, not a string: quote it (YAML reads y, n, yes, no, on, off and numbers otherwise)", f.name, f.v)
		}
	}
	str := func(v any) string { s, _ := v.(string); return s }
	m = Manifest{APIVersion: str(obj["apiVersion"]), Kind: str(obj["kind"]),
		Name: str(meta["name"]), Namespace: str(meta["namespace"]), Object: obj}
	switch {
	case m.APIVersion == "" || strings.Count(m.APIVersion, "/") > 1 || strings.HasSuffix(m.APIVersion, "/"):
		return Manifest{}, false, fmt.Errorf("apiVersion %q: want v1 or group/version", m.APIVersion)
	case m.Kind == "":
		return Manifest{}, false, fmt.Errorf("no kind (a %s object needs one)", m.APIVersion)
	case m.Name == "":
		return Manifest{}, false, fmt.Errorf("%s has no metadata.name (generateName is not enough: an object is looked up by name before it is created)", m.Kind)
	case strings.ContainsAny(m.Name+m.Namespace, "/%?#") || m.Name == "." || m.Name == "..":
		return Manifest{}, false, fmt.Errorf("%s %q (namespace %q): a name or namespace cannot be . or .. or contain / %% ? #", m.Kind, m.Name, m.Namespace)
	}
	return m, false, nil
}

// Order sorts manifests as cluster-bootstrap creates them: by path
// (SortPath), lexically, and by their place in the file. library-go's
// EnsureManifestsCreated (pkg/assets/create/creater.go, vendored by
// cluster-bootstrap release-4.16 to 4.19) sorts the paths and nothing
// else: no kind goes first. The installer's manifests carry number prefixes
// (0000_00_...) for that reason; a kind whose CRD is not Established yet
// fails its round and is retried, with discovery asked again.
func Order(ms []Manifest) {
	sort.SliceStable(ms, func(i, j int) bool {
		if ki, kj := ms[i].sortPath(), ms[j].sortPath(); ki != kj {
			return ki < kj
		}
		return ms[i].Doc < ms[j].Doc
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
