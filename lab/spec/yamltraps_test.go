package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What YAML reads differently from what was written is an error in the
// user's terms, with the line and how to write it.
func TestParseRefusesYAMLTraps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"empty file", "", `x.yaml: (file): is empty (or only comments): write a lab spec`},
		{"only comments", "# nothing yet\n\n", `(file): is empty (or only comments)`},
		{"second document", "name: a\n---\nname: b\n", `(file): holds a second YAML document (after the '---' before line 3): bootlab reads one lab spec per file`},
		{"YAML 1.1 boolean", "cluster: {name: no}\n", `cluster.name: no is read by YAML as the boolean false, not the text "no" (line 1): quote it: name: "no"`},
		{"boolean in capitals", "cluster:\n  name: OFF\n", `cluster.name: OFF is read by YAML as the boolean false`},
		{"float version", "openshift:\n  version: 4.20\n", `openshift.version: 4.20 is read by YAML as a number, which drops what makes it text (4.20 becomes 4.2) (line 2): quote it: version: "4.20"`},
		{"hex in a node name", "nodes:\n- name: 0x1f\n  role: master\n", `nodes[0].name: 0x1f is read by YAML as the number 31, not the text written (line 2): quote it: name: "0x1f"`},
		{"tab indentation", "name: a\ncluster:\n\tname: b\n", `(file): line 3 is indented with a tab: YAML indents with spaces only; replace the tab with spaces`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.in), "x.yaml")
			require.Error(t, err)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Quoted values, true booleans in boolean fields, a leading '---' and a
// stray trailing one are all what their writer meant.
func TestParseAcceptsWhatIsMeant(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("---\nname: a\ncluster: {name: \"no\"}\nopenshift:\n  version: \"4.20\"\n  manualBootstrap: yes\n---\n"), "x.yaml")
	require.NoError(t, err)
	assert.Equal(t, "no", s.Cluster.Name)
	assert.Equal(t, "4.20", s.OpenShift.Version)
	assert.True(t, s.OpenShift.ManualBootstrap)
}

// What Marshal prints reads back as the same spec: text YAML 1.1 reads as
// a boolean stays quoted (Parse would refuse it plain).
func TestMarshalQuotesWhatYAMLWouldMisread(t *testing.T) {
	t.Parallel()
	s := &Spec{Name: "no", Cluster: Cluster{Name: "off"}, OpenShift: OpenShift{Version: "4.20"}}
	s.Defaults()
	out, err := s.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(out), "name: \"no\"\n")
	assert.Contains(t, string(out), "  name: \"off\"\n")
	assert.Contains(t, string(out), "version: \"4.20\"\n")
	assert.Contains(t, string(out), "profile: probe\n", "other text stays plain")
	back, err := Parse(out, "printed")
	require.NoError(t, err)
	back.Defaults()
	again, err := back.Marshal()
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again))
}
