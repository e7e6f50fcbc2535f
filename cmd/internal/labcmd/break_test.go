package labcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// lab break takes a fault, --list or --undo [FAULT], and refuses what
// mixes them.
func TestBreakFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		want  BreakOptions
		usage string
	}{
		{args: []string{"lb-no-bootstrap-mcs"}, want: BreakOptions{Fault: "lb-no-bootstrap-mcs"}},
		{args: []string{"--list"}, want: BreakOptions{List: true}},
		{args: []string{"--undo"}, want: BreakOptions{Undo: true}},
		{args: []string{"--undo", "api-int-wrong-address"}, want: BreakOptions{Undo: true, Fault: "api-int-wrong-address"}},
		{args: nil, usage: "name a fault"},
		{args: []string{"--list", "--undo"}, usage: "--list takes no fault"},
		{args: []string{"a", "b"}, usage: "accepts at most 1 arg"},
	} {
		var got *BreakOptions
		f := &cmdutil.Factory{Streams: cmdutil.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
		cmd := NewCmdBreak(f, func(o *BreakOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		if tc.usage != "" {
			require.Error(t, err, tc.args)
			assert.Contains(t, err.Error(), tc.usage)
			continue
		}
		require.NoError(t, err, tc.args)
		got.Spec = cmdutil.SpecFlags{}
		assert.Equal(t, tc.want, *got, tc.args)
	}
}
