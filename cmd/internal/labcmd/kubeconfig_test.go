package labcmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// lab kubectl wants kubectl's arguments after --.
func TestKubectlFlags(t *testing.T) {
	var got *KubectlOptions
	cmd := NewCmdKubectl(testFactory(), func(o *KubectlOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--name", "demo", "--", "get", "nodes", "-o", "wide"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, []string{"get", "nodes", "-o", "wide"}, got.Args)

	cmd = NewCmdKubectl(testFactory(), func(o *KubectlOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"get", "nodes"})
	err := cmd.Execute()
	var ce *cmdutil.CodeError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cmdutil.ExitUsage, ce.Code)
	assert.Contains(t, err.Error(), "bootlab lab kubectl -- get nodes")

	kc := NewCmdKubeconfig(testFactory(), func(o *KubeconfigOptions) error { t.Fatal("must not run"); return nil })
	kc.SetArgs([]string{"--tunnel", "16443"})
	require.ErrorAs(t, kc.Execute(), &ce)
	assert.Equal(t, cmdutil.ExitUsage, ce.Code)
}
