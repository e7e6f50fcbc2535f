package ignition

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/bootlab/bootlab/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApplyManualBootstrapGolden(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("../../testdata/openshift/installer-bootstrap.ign")
	require.NoError(t, err)
	out, err := ApplyManualBootstrap(in)
	require.NoError(t, err)

	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, out, "", "  "))
	pretty.WriteByte('\n')
	golden := "../../testdata/openshift/manual-bootstrap.golden.ign"
	testutil.Golden(t, golden, pretty.Bytes())
	testutil.IgnitionValidate(t, golden)

	cfg, err := Parse(out)
	require.NoError(t, err)
	var found bool
	for _, u := range cfg.Systemd.Units {
		if u.Name == BootkubeUnit {
			found = true
			require.NotNil(t, u.Mask)
			assert.True(t, *u.Mask)
			assert.Nil(t, u.Contents, "a masked unit's contents would be replaced by the /dev/null symlink")
		}
		if u.Name == "progress.service" {
			assert.NotNil(t, u.Contents, "other units are untouched")
		}
	}
	assert.True(t, found)
	saved, ok, err := FileContents(cfg, SavedBootkubeUnitPath)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Contains(t, string(saved), "ExecStart=/usr/local/bin/bootkube.sh")

	// The motd gains one append resource mentioning the commands.
	for _, f := range cfg.Storage.Files {
		if f.Path == "/etc/motd" {
			require.Len(t, f.Append, 2)
			b, err := DecodeDataURL(*f.Append[1].Source)
			require.NoError(t, err)
			assert.Contains(t, string(b), "bootlab stage handoff")
		}
	}
	manual, err := IsManualBootstrap(out)
	require.NoError(t, err)
	assert.True(t, manual)
	manual, err = IsManualBootstrap(in)
	require.NoError(t, err)
	assert.False(t, manual)
}

func TestApplyManualBootstrapIsIdempotent(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("../../testdata/openshift/installer-bootstrap.ign")
	require.NoError(t, err)
	once, err := ApplyManualBootstrap(in)
	require.NoError(t, err)
	twice, err := ApplyManualBootstrap(once)
	require.NoError(t, err)
	assert.JSONEq(t, string(once), string(twice))
}

func TestApplyManualBootstrapRejects(t *testing.T) {
	t.Parallel()
	_, err := ApplyManualBootstrap([]byte(`{"ignition":{"version":"3.2.0"}}`))
	assert.ErrorContains(t, err, "no bootkube.service unit")
	_, err = ApplyManualBootstrap([]byte(`{"ignition":{"version":"3.2.0"`))
	assert.ErrorContains(t, err, "bootstrap.ign")
}
