package openshift

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	return p
}

func validPullSecret() string {
	a := base64.StdEncoding.EncodeToString([]byte("student:s3cr3t-token"))
	return `{"auths": {"quay.io": {"auth": "` + a + `", "email": "s@example.com"},
 "registry.example.com": {"credsStore": "secretservice"}}}`
}

func TestLoadPullSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	got, err := LoadPullSecret(writeFile(t, dir, "ok.json", validPullSecret()))
	require.NoError(t, err)
	assert.NotContains(t, got, "\n", "compact JSON for install-config")
	assert.Contains(t, got, `"quay.io"`)

	secretB64 := base64.StdEncoding.EncodeToString([]byte("nocolon-SECRET"))
	cases := map[string]struct{ data, want string }{
		"not json":    {`{"auths": {`, "is not valid JSON"},
		"trailing":    {`{"auths":{"a":{"username":"u","password":"p"}}} x`, "is not valid JSON"},
		"array":       {`[1]`, `"auths"`},
		"no auths":    {`{"other": {}}`, `has no "auths" entries`},
		"bad base64":  {`{"auths": {"quay.io": {"auth": "!!!SECRET"}}}`, `auths["quay.io"].auth is not base64`},
		"no colon":    {`{"auths": {"quay.io": {"auth": "` + secretB64 + `"}}}`, `does not decode to "user:password"`},
		"empty entry": {`{"auths": {"quay.io": {"email": "x"}}}`, `has neither "auth" nor "credsStore"`},
		"no password": {`{"auths": {"quay.io": {"username": "SECRETUSER"}}}`, `has neither`},
		// docker login takes these; openshift-install does not.
		"user and password only": {`{"auths": {"quay.io": {"username": "u", "password": "SECRET"}}}`, `has neither "auth" nor "credsStore", one of which openshift-install requires`},
		"auth not a string":      {`{"auths": {"quay.io": {"auth": 42}}}`, `auths["quay.io"].auth is not a string`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, dir, "bad.json", c.data)
			_, err := LoadPullSecret(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), p, "the error names the file")
			assert.Contains(t, err.Error(), "openshift.pullSecretFile")
			assert.Contains(t, err.Error(), "console.redhat.com", "the error says what to do")
			assert.NotContains(t, err.Error(), "SECRET", "the error never quotes the secret")
			var pe *PullSecretError
			require.ErrorAs(t, err, &pe)
		})
	}
	_, err = LoadPullSecret(filepath.Join(dir, "missing.json"))
	assert.ErrorContains(t, err, "file not found")
}
