package create

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data string
		want       []string // Kind namespace/name of each object
		err        string
	}{
		{name: "one YAML object", data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: kube-system\n",
			want: []string{"ConfigMap kube-system/a"}},
		{name: "JSON", data: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"openshift-etcd"}}`,
			want: []string{"Namespace /openshift-etcd"}},
		{name: "multi-document with empty and comment documents",
			data: "---\n# a comment\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\n---\n\n---\napiVersion: config.openshift.io/v1\nkind: DNS\nmetadata: {name: cluster}\n",
			want: []string{"Secret ns/s", "DNS /cluster"}},
		{name: "unquoted namespace read as a boolean", data: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\n", err: "metadata.namespace is false, not a string: quote it"},
		{name: "numeric name", data: "apiVersion: v1\nkind: Secret\nmetadata: {name: 10}\n", err: "metadata.name is 10, not a string"},
		{name: "empty file", data: "", err: "no object in it"},
		{name: "only comments", data: "# nothing\n---\n", err: "no object in it"},
		{name: "not YAML", data: "apiVersion: v1\nkind: [\n", err: "document 1: not YAML or JSON"},
		{name: "a list, not an object", data: "- a\n- b\n", err: "not an object"},
		{name: "no apiVersion", data: "kind: ConfigMap\nmetadata: {name: a}\n", err: `apiVersion ""`},
		{name: "bad apiVersion", data: "apiVersion: a/b/c\nkind: X\nmetadata: {name: a}\n", err: `apiVersion "a/b/c"`},
		{name: "no kind", data: "apiVersion: v1\nmetadata: {name: a}\n", err: "no kind"},
		{name: "no name", data: "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: a-}\n", err: "ConfigMap has no metadata.name"},
		{name: "slash in name", data: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a/b}\n", err: "cannot be . or .. or contain / % ? #"},
		{name: "second document broken", data: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: X\n", err: "document 2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ms, err := Parse("f.yaml", []byte(tc.data))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			var got []string
			for i, m := range ms {
				got = append(got, m.Kind+" "+m.Namespace+"/"+m.Name)
				assert.Equal(t, i, m.Doc)
				assert.Equal(t, len(ms), m.Docs)
				assert.Equal(t, m.Kind, m.Object["kind"], "the object is kept whole")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	return dir
}

// Load orders by path alone, as library-go's EnsureManifestsCreated sorts
// its paths (no kind first), walks subdirectories and skips hidden ones.
func TestLoadOrdersAsClusterBootstrap(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"00_cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: ns}\n",
		"99_ns.yaml":       "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n",
		"50_crd.yaml":      "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: dnses.config.openshift.io}\n",
		"10_dns.yml":       "apiVersion: config.openshift.io/v1\nkind: DNS\nmetadata: {name: cluster}\n",
		"sub/05_both.json": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"}}` + "\n---\n" + `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}`,
		".hidden/x.yaml":   "not: a manifest\n",
	})
	ms, err := Load(dir)
	require.NoError(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, m.Source()+" "+m.Kind)
	}
	assert.Equal(t, []string{
		"00_cm.yaml ConfigMap",
		"10_dns.yml DNS",
		"50_crd.yaml CustomResourceDefinition",
		"99_ns.yaml Namespace",
		"sub/05_both.json#1 Secret",
		"sub/05_both.json#2 Namespace",
	}, got)
}

// Every bad file is named with its reason, and nothing is returned.
func TestLoadNamesEveryBadFile(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"good.yaml":  "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n",
		"empty.yaml": "",
		"bad.yaml":   "kind: [\n",
		"noname.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
	})
	ms, err := Load(dir)
	assert.Nil(t, ms)
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Len(t, le.Files, 3)
	msg := err.Error()
	assert.Contains(t, msg, "3 manifest file(s) in "+dir)
	assert.Contains(t, msg, "nothing was created")
	assert.Contains(t, msg, `"bad.yaml": document 1: not YAML or JSON`)
	assert.Contains(t, msg, `"empty.yaml": no object in it`)
	assert.Contains(t, msg, `"noname.yml": document 1: ConfigMap has no metadata.name`)
	assert.NotContains(t, msg, "good.yaml")
}

func TestLoadMissingDirectory(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read manifests in")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestResourceStringAndPaths(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "configmaps.v1./cm -n kube-system", resourceString("v1", "configmaps", "cm", "kube-system"))
	assert.Equal(t, "dnses.v1.config.openshift.io/cluster -n ", resourceString("config.openshift.io/v1", "dnses", "cluster", ""))
	assert.Equal(t, "/api/v1/namespaces/ns/secrets", collectionPath("v1", resource{Plural: "secrets", Namespaced: true}, "ns"))
	assert.Equal(t, "/apis/config.openshift.io/v1/dnses", collectionPath("config.openshift.io/v1", resource{Plural: "dnses"}, "ignored"))
}
