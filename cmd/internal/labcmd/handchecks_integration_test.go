//go:build integration

package labcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// pageKubectlChecks are the `bootlab lab kubectl` lines of a stage page's
// hand checks, as written (the page's fenced blocks between "## Hand
// checks" and the next section).
func pageKubectlChecks(t *testing.T, docs, page string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docs, "stages", page))
	require.NoError(t, err)
	text := string(data)
	start := strings.Index(text, "\n## Hand checks\n")
	require.GreaterOrEqual(t, start, 0, "%s has hand checks", page)
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var out []string
	inFence := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence && strings.HasPrefix(line, "bootlab lab kubectl ") {
			out = append(out, line)
		}
	}
	return out
}

// The stage pages 13 and 14 say their `bootlab lab kubectl` hand checks
// work on a rehearsal lab: each runs as written (the lab named by
// $BOOTLAB_LAB, as a learner's shell would) against a real kube-apiserver
// holding what those stages leave (cluster-bootstrap's bootstrap-success
// and bootstrap-finished events, a master's Node), and exits 0 with the answer the page describes.
func TestStagePagesKubectlHandChecksRunAsWritten(t *testing.T) {
	docs, err := filepath.Abs(filepath.Join("..", "..", "..", "docs"))
	require.NoError(t, err)
	home := isolatedHost(t) // changes directory
	cp := kuberelease.StartControlPlane(t)
	s := &spec.Spec{Name: "hand", Profile: spec.ProfileOpenShift, LabDir: filepath.Join(home, "labs", "hand"),
		Libvirt: spec.Libvirt{URI: "test:///default"}, Network: spec.Network{CIDR: "127.0.0.0/24"}}
	s.Defaults()
	require.NoError(t, (&labdir.State{Spec: s}).Save(s.LabDir))
	installerKubeconfig(t, s, cp)
	t.Setenv(cmdutil.EnvLab, s.Name)
	objs := filepath.Join(t.TempDir(), "objs.yaml")
	require.NoError(t, os.WriteFile(objs, []byte("apiVersion: v1\nkind: Node\nmetadata: {name: master-0}\n"+
		"---\napiVersion: v1\nkind: Event\nmetadata: {name: bootstrap-success, namespace: kube-system}\ninvolvedObject: {namespace: kube-system}\nmessage: Required control plane pods have been created\n"+
		"---\napiVersion: v1\nkind: Event\nmetadata: {name: bootstrap-finished, namespace: kube-system}\ninvolvedObject: {namespace: kube-system}\nmessage: Required control plane pods have been created\n"), 0o600))
	out, err := cp.Kubectl("create", "-f", objs)
	require.NoError(t, err, out)

	// What each known hand check answers here: stdout, or stderr after
	// "stderr: ".
	want := map[string]string{
		"bootlab lab kubectl -- get --raw /readyz":                                             "ok",
		"bootlab lab kubectl -- get event -n kube-system bootstrap-success bootstrap-finished": "Required control plane pods have been created",
		"bootlab lab kubectl -- get csr":                                                       "stderr: No resources found",
		"bootlab lab kubectl -- get nodes":                                                     "master-0",
	}
	kubectl := func(f *cmdutil.Factory) *cobra.Command { return NewCmdKubectl(f, nil) }
	ran := 0
	for _, page := range []string{"13-cb-bootstrap.md", "14-cvo-overrides.md"} {
		lines := pageKubectlChecks(t, docs, page)
		require.NotEmpty(t, lines, "%s shows lab kubectl hand checks", page)
		for _, line := range lines {
			expect, known := want[line]
			require.True(t, known, "%s: %q is a hand check this test does not know: add what it answers", page, line)
			require.NotContains(t, line, `"`, "run word by word: no quoting")
			out, errOut, err := runLabCmd(t, kubectl, strings.Fields(line)[3:]...)
			require.NoError(t, err, "%s: %s\n%s", page, line, errOut)
			if e, ok := strings.CutPrefix(expect, "stderr: "); ok {
				out, expect = errOut, e
			}
			assert.Contains(t, out, expect, "%s: %s", page, line)
			ran++
		}
	}
	assert.Equal(t, 5, ran, "13's three and 14's two")
}
