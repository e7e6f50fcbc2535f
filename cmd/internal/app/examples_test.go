package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// Every command a user runs shows examples in its help, as gh and kubectl
// do, and every example is a command the CLI accepts as written: the
// command exists, every flag exists, the arguments fit. Cobra's own
// completion and help commands are left out.
func TestEveryCommandHasExamples(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := NewCmdRoot(&cmdutil.Factory{Streams: cmdutil.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
		root.InitDefaultCompletionCmd()
		return root
	}
	var runnable []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "completion" || c.Name() == "help" || c.Hidden {
			return
		}
		if c.Runnable() {
			runnable = append(runnable, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())
	require.Greater(t, len(runnable), 40, "the CLI has many commands")

	examples := 0
	for _, c := range runnable {
		path := c.CommandPath()
		if !assert.NotEmpty(t, strings.TrimSpace(c.Example), "%s has no Example", path) {
			continue
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line, _, _ = strings.Cut(line, " #")
			// A pipe hands bootlab's output to another program: the
			// bootlab part is what must parse.
			line, _, _ = strings.Cut(line, " | ")
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "sudo "))
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "bootlab ") {
				assert.True(t, strings.HasPrefix(line, "make "), "%s example %q: bootlab or make", path, line)
				continue
			}
			examples++
			args := strings.Fields(line)[1:]
			cmd, rest, err := newRoot().Find(args)
			if !assert.NoError(t, err, "%s example %q: no such command", path, line) {
				continue
			}
			if !assert.NoError(t, cmd.ParseFlags(rest), "%s example %q", path, line) {
				continue
			}
			if cmd.Args != nil {
				assert.NoError(t, cmd.Args(cmd, cmd.Flags().Args()), "%s example %q: arguments", path, line)
			}
		}
	}
	t.Logf("%d commands, %d examples", len(runnable), examples)
}
