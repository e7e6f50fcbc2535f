package labcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
)

// `lab up` refuses a malformed or missing pull secret before anything runs:
// no libvirt connection, no preflight, no lab key, no lab directory.
func TestUpRejectsBadPullSecretBeforeAnything(t *testing.T) {
	s, dir := fakeLab(t)
	s.Libvirt.URI = "test:///default"
	data, err := s.Marshal()
	require.NoError(t, err)
	specFile := filepath.Join(dir, "bootlab.yaml")
	require.NoError(t, os.WriteFile(specFile, data, 0o644))
	calls := filepath.Join(dir, "calls")
	t.Setenv("FAKE_INSTALLER_LOG", calls)

	for name, c := range map[string]struct{ content, want string }{
		"malformed": {`{"auths":{"quay.io":{"auth":"bm9jb2xvbg=="}}}`, `does not decode to "user:password"`},
		"truncated": {`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}`, "is not valid JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(s.OpenShift.PullSecretFile, []byte(c.content), 0o600))
			var errOut bytes.Buffer
			f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &errOut}, Status: status.New(&errOut, false)}
			cmd := NewCmdUp(f, nil)
			cmd.SetArgs([]string{"-f", specFile, "--no-preflight"})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), s.OpenShift.PullSecretFile, "the error names the file")
			assert.NotContains(t, err.Error(), "dXNlcjpwYXNz", "the error never quotes the secret")
			var ec cmdutil.ExitCoder
			require.ErrorAs(t, err, &ec)
			assert.Equal(t, cmdutil.ExitInvalid, ec.ExitCode())
			assert.NoDirExists(t, s.LabDir, "no lab key, no lab directory")
			assert.NoFileExists(t, calls, "openshift-install never ran")
			assert.Empty(t, errOut.String(), "no step started")
		})
	}
}
