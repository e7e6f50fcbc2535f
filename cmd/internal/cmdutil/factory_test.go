package cmdutil

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRetarget(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"run `bootlab lab verify` next", "run `bootlab lab verify -f ux1.yaml` next"},
		{"`bootlab lab console NODE`, `bootlab lab down` and `bootlab stage run 07`",
			"`bootlab lab console NODE -f ux1.yaml`, `bootlab lab down -f ux1.yaml` and `bootlab stage run 07 -f ux1.yaml`"},
		// Already aimed, or takes no spec: left alone.
		{"`bootlab lab down --name ux2`", "`bootlab lab down --name ux2`"},
		{"`bootlab lab probe-image build`", "`bootlab lab probe-image build`"},
		{"`bootlab stage explain 07`", "`bootlab stage explain 07`"},
		{"no command here", "no command here"},
		{"rebuild with `bootlab lab down && bootlab lab up`", "rebuild with `bootlab lab down -f ux1.yaml && bootlab lab up -f ux1.yaml`"},
	} {
		assert.Equal(t, c.want, Retarget(c.in, "-f ux1.yaml"), c.in)
	}
	assert.Equal(t, "`bootlab lab verify`", Retarget("`bootlab lab verify`", ""))
}

func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	assert.NoError(t, WriteJSON(&b, "Thing", struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	}{"x", true}))
	assert.Equal(t, "{\n  \"schemaVersion\": 1,\n  \"kind\": \"Thing\",\n  \"name\": \"x\",\n  \"ok\": true\n}\n", b.String())
	b.Reset()
	assert.NoError(t, WriteJSON(&b, "Empty", struct{}{}))
	assert.Equal(t, "{\n  \"schemaVersion\": 1,\n  \"kind\": \"Empty\"\n}\n", b.String())
	assert.Error(t, WriteJSON(&b, "List", []int{1}), "a bare array is no document")
}
