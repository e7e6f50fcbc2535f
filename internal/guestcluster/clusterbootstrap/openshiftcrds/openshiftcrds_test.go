package openshiftcrds

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kinds the rehearsal's installer manifests, renders and stand-in
// operators create, each with a v1 CRD here, served and stored, cluster
// scoped as upstream, named plural.group.
func TestEveryKindTheBootstrapCreatesHasACRD(t *testing.T) {
	t.Parallel()
	ms, err := Manifests()
	require.NoError(t, err)
	kinds := map[string]string{}
	for _, m := range ms {
		require.True(t, m.IsCRD(), m.Path)
		assert.True(t, strings.HasPrefix(m.Path, Prefix), m.Path)
		spec := m.Object["spec"].(map[string]any)
		names := spec["names"].(map[string]any)
		group := spec["group"].(string)
		assert.Equal(t, names["plural"].(string)+"."+group, m.Name, "metadata.name is plural.group")
		assert.Equal(t, "Cluster", spec["scope"], m.Name)
		assert.Equal(t, "apiextensions.k8s.io/v1", m.APIVersion, m.Name)
		versions := spec["versions"].([]any)
		require.Len(t, versions, 1, m.Name)
		v := versions[0].(map[string]any)
		assert.Equal(t, []any{"v1", true, true}, []any{v["name"], v["served"], v["storage"]}, m.Name)
		kinds[group+"/"+names["kind"].(string)] = m.Name
		ann := m.Object["metadata"].(map[string]any)["annotations"].(map[string]any)
		assert.Contains(t, ann["bootlab.dev/written-by"], "reduced structural schema of openshift/api's", m.Name)
	}
	for _, k := range []string{
		"config.openshift.io/ClusterVersion", "config.openshift.io/ClusterOperator", "config.openshift.io/Infrastructure",
		"config.openshift.io/Network", "config.openshift.io/DNS", "config.openshift.io/Ingress", "config.openshift.io/Proxy",
		"config.openshift.io/Scheduler", "config.openshift.io/FeatureGate", "config.openshift.io/APIServer",
		"config.openshift.io/Authentication", "config.openshift.io/Image", "config.openshift.io/OAuth",
		"config.openshift.io/Project", "config.openshift.io/Console",
		"operator.openshift.io/Etcd", "operator.openshift.io/KubeAPIServer", "operator.openshift.io/KubeControllerManager",
		"operator.openshift.io/KubeScheduler", "machineconfiguration.openshift.io/MachineConfig",
	} {
		assert.Contains(t, kinds, k)
	}
	assert.Len(t, kinds, len(ms), "one CRD per kind")
}

// Each schema is structural, which apiextensions.k8s.io/v1 demands: every
// node says its type, or keeps unknown fields, and nothing else does.
func TestSchemasAreStructural(t *testing.T) {
	t.Parallel()
	ms, err := Manifests()
	require.NoError(t, err)
	for _, m := range ms {
		v := m.Object["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
		root := v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		assert.Equal(t, "object", root["type"], m.Name)
		for _, problem := range structural(root, "openAPIV3Schema") {
			t.Errorf("%s: %s", m.Name, problem)
		}
	}
}

func structural(node map[string]any, at string) []string {
	var out []string
	if _, ok := node["type"]; !ok {
		out = append(out, at+" has no type")
	}
	for k := range node {
		switch k {
		case "type", "properties", "items", "required", "x-kubernetes-preserve-unknown-fields", "format", "nullable", "minimum", "description":
		default:
			out = append(out, fmt.Sprintf("%s: %s is not used in bootlab's reduced schemas", at, k))
		}
	}
	if props, ok := node["properties"].(map[string]any); ok {
		for name, p := range props {
			out = append(out, structural(p.(map[string]any), at+"."+name)...)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		out = append(out, structural(items, at+"[]")...)
	}
	if node["type"] == "array" && node["items"] == nil {
		out = append(out, at+" is an array without items")
	}
	return out
}
