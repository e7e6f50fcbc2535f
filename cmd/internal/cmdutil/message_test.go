package cmdutil

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCutLong(t *testing.T) {
	long := strings.Repeat("a", 10000)
	cases := []struct {
		name, in, want string
	}{
		{"short message unchanged", `name: "demo" is fine`, `name: "demo" is fine`},
		{"a long word is cut around …", `name: "` + long + `": too long`, `name: "` + strings.Repeat("a", 59) + "…" + strings.Repeat("a", 6) + `": too long`},
		{"spaces and newlines kept", "x\n  " + long + "\tend", "x\n  " + strings.Repeat("a", 60) + "…" + strings.Repeat("a", 8) + "\tend"},
		{"a word of exactly the limit stays", strings.Repeat("é", maxWord) + " " + long[:maxWord], strings.Repeat("é", maxWord) + " " + long[:maxWord]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CutLong(tc.in)
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
		})
	}
}
