package openshift

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// schemaNode is one node of testdata/openshift/install-config-schema.yaml.
type schemaNode struct {
	Type     string                 `json:"type"`
	Fields   map[string]*schemaNode `json:"fields"`
	Required []string               `json:"required"`
	Items    *schemaNode            `json:"items"`
	Enum     []string               `json:"enum"`
}

func loadSchema(t *testing.T) *schemaNode {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, "install-config-schema.yaml"))
	require.NoError(t, err)
	var doc struct {
		Release string      `json:"release"`
		Schema  *schemaNode `json:"schema"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &doc))
	require.NotNil(t, doc.Schema)
	// A new default release means reading the installer's types again.
	require.True(t, strings.HasPrefix(spec.DefaultOpenShiftVersion, doc.Release+"."),
		"the schema describes %s, the default release is %s: check installer pkg/types of the new release and update %s", doc.Release, spec.DefaultOpenShiftVersion, "testdata/openshift/install-config-schema.yaml")
	return doc.Schema
}

// checkSchema returns every place where v (decoded YAML) departs from n.
func checkSchema(n *schemaNode, v any, path string) []string {
	var bad []string
	wrong := func(want string) []string {
		return []string{fmt.Sprintf("%s: is %T, the installer reads %s", path, v, want)}
	}
	switch n.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return wrong("an object")
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, known := n.Fields[k]
			if !known {
				bad = append(bad, fmt.Sprintf("%s.%s: no such field in install-config", path, k))
				continue
			}
			bad = append(bad, checkSchema(f, m[k], path+"."+k)...)
		}
		for _, k := range n.Required {
			if _, ok := m[k]; !ok {
				bad = append(bad, fmt.Sprintf("%s.%s: missing", path, k))
			}
		}
	case "list":
		l, ok := v.([]any)
		if !ok {
			return wrong("a list")
		}
		for i, item := range l {
			bad = append(bad, checkSchema(n.Items, item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string", "cidr":
		s, ok := v.(string)
		if !ok {
			return wrong("a string")
		}
		if len(n.Enum) > 0 && !slices.Contains(n.Enum, s) {
			bad = append(bad, fmt.Sprintf("%s: %q is not one of %v", path, s, n.Enum))
		}
		if _, err := netip.ParsePrefix(s); n.Type == "cidr" && err != nil {
			bad = append(bad, fmt.Sprintf("%s: %q is not a CIDR", path, s))
		}
	case "int":
		f, ok := v.(float64) // JSON numbers
		if !ok || f != float64(int64(f)) {
			return wrong("an integer")
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return wrong("a bool")
		}
	default:
		bad = append(bad, fmt.Sprintf("%s: the schema names an unknown type %q", path, n.Type))
	}
	return bad
}

// openShiftFixtures returns the valid spec fixtures of the openshift profile, defaulted and validated.
func openShiftFixtures(t *testing.T) map[string]*spec.Spec {
	t.Helper()
	dir, err := filepath.Abs("../../testdata/specs")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(dir, "valid-*.yaml"))
	require.NoError(t, err)
	out := map[string]*spec.Spec{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		s, err := spec.Parse([]byte(strings.ReplaceAll(string(raw), "${TESTDATA}", dir)), filepath.Base(f))
		require.NoError(t, err)
		s.LabDir = t.TempDir()
		s.Defaults()
		if s.Profile != spec.ProfileOpenShift {
			continue
		}
		require.NoError(t, s.Validate(), filepath.Base(f))
		out[filepath.Base(f)] = s
	}
	return out
}

// Every valid openshift fixture renders an install-config whose every key
// is one the installer reads, with the type it reads.
func TestInstallConfigMatchesInstallerSchema(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	fixtures := openShiftFixtures(t)
	require.GreaterOrEqual(t, len(fixtures), 2, "valid-openshift*.yaml fixtures")
	for name, s := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ps, err := LoadPullSecret(s.OpenShift.PullSecretFile)
			require.NoError(t, err)
			// The lab key's public half, as lab.EnsureSSHKey leaves it.
			require.NoError(t, os.MkdirAll(filepath.Dir(labdir.SSHKey(s)), 0o700))
			require.NoError(t, os.WriteFile(labdir.SSHKey(s)+".pub", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILabKey bootlab-schema\n"), 0o644))
			keys, err := InstallSSHKeys(s)
			require.NoError(t, err)
			ic, err := NewInstallConfig(s, ps, keys)
			require.NoError(t, err)
			data, err := ic.Marshal()
			require.NoError(t, err)
			var doc any
			require.NoError(t, yaml.Unmarshal(data, &doc))
			assert.Empty(t, checkSchema(schema, doc, "install-config"), string(data))

			// The spec's networks are what the installer gets.
			require.Len(t, ic.Networking.ClusterNetwork, len(s.OpenShift.ClusterNetwork))
			for i, cn := range s.OpenShift.ClusterNetwork {
				assert.Equal(t, ClusterNetwork{CIDR: cn.CIDR, HostPrefix: cn.HostPrefix}, ic.Networking.ClusterNetwork[i])
			}
			assert.Equal(t, s.OpenShift.ServiceNetwork, ic.Networking.ServiceNetwork)
			assert.Equal(t, s.Network.CIDR, ic.Networking.MachineNetwork[0].CIDR)
		})
	}
}

// The check catches what it is for: a misspelt key, a wrong type, a bad
// enum value, a CIDR that is not one, a required field left out.
func TestInstallConfigSchemaCatchesTypos(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	s := testSpec(t, 2)
	ic, err := NewInstallConfig(s, `{"auths":{}}`, "ssh-ed25519 AAAA x")
	require.NoError(t, err)
	data, err := ic.Marshal()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(data, &doc))
	require.Empty(t, checkSchema(schema, doc, "install-config"))

	net := doc["networking"].(map[string]any)
	net["machineNetworks"] = net["machineNetwork"]
	delete(net, "machineNetwork")
	doc["controlPlane"].(map[string]any)["replicas"] = "3"
	doc["compute"].([]any)[0].(map[string]any)["hyperthreading"] = "On"
	net["serviceNetwork"] = []any{"172.30.0.0"}
	assert.Equal(t, []string{
		"install-config.compute[0].hyperthreading: \"On\" is not one of [Enabled Disabled]",
		"install-config.controlPlane.replicas: is string, the installer reads an integer",
		"install-config.networking.machineNetworks: no such field in install-config",
		"install-config.networking.serviceNetwork[0]: \"172.30.0.0\" is not a CIDR",
		"install-config.networking.machineNetwork: missing",
	}, checkSchema(schema, doc, "install-config"))
}
