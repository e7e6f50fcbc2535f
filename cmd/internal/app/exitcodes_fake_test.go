package app

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
)

// `lab status` of a lab that does not exist exits 5 in both forms: the
// JSON document says every object is absent, the code says "no such lab".
// On the fake hypervisor: the exit code is the command's logic, not
// libvirtd's.
func TestStatusOfNoSuchLabExits5InEveryForm(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	t.Setenv(cmdutil.EnvLab, "")
	args := []string{"lab", "status", "--name", "h21dry-nosuch", "--uri", "test:///default"}
	code, _, errOut := runOn(t, fake.New(), args...)
	assert.Equal(t, cmdutil.ExitNoLab, code, errOut)
	assert.Contains(t, errOut, "lab h21dry-nosuch is not up")

	code, out, errOut := runOn(t, fake.New(), append(args, "-o", "json")...)
	assert.Equal(t, cmdutil.ExitNoLab, code, errOut)
	var doc struct {
		Kind    string `json:"kind"`
		Network struct {
			Exists bool `json:"exists"`
		} `json:"network"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, "LabStatus", doc.Kind)
	assert.False(t, doc.Network.Exists)
}
