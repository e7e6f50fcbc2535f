package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// docCommand is one bootlab command line found in the README or docs/.
type docCommand struct {
	where string
	line  string
}

var (
	inlineCmd = regexp.MustCompile("`((?:sudo )?bootlab [^`]+)`")
	fenceLine = regexp.MustCompile(`^\s*(?:\$ |sudo )?(?:bin/)?(bootlab .*)$`)
)

// docCommands extracts every bootlab command from the Markdown files: lines
// in fenced code blocks and inline code spans.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	files := []string{filepath.Join(root, "README.md")}
	for _, glob := range []string{"docs/*.md", "docs/stages/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		require.NoError(t, err)
		files = append(files, m...)
	}
	var out []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		inFence := false
		for i, line := range strings.Split(string(data), "\n") {
			where := filepath.Base(f) + ":" + strconv.Itoa(i+1)
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				if m := fenceLine.FindStringSubmatch(line); m != nil {
					out = append(out, docCommand{where, m[1]})
				}
				continue
			}
			for _, m := range inlineCmd.FindAllStringSubmatch(line, -1) {
				out = append(out, docCommand{where, strings.TrimPrefix(m[1], "sudo ")})
			}
		}
	}
	return out
}

// placeholders turn the docs' metasyntax into values a command accepts.
var placeholders = strings.NewReplacer(" NN", " 07", " NODE", " bootstrap", " FILE", " SPEC", " NAME", " demo",
	" COMMAND...", " true", " COMMAND", " true", "~/pull-secret.json", "PULLSECRET", "zsh|fish", "zsh")

// Every bootlab command the README and docs show is accepted by the CLI as
// written: the command and subcommand exist, every flag exists, the
// arguments fit. Commands that change nothing run for real (stage explain,
// stage list, every stage run with --dry-run, lab graph without --out, lab
// diagnose of the repository's bundles) and must succeed.
func TestEveryDocumentedCommandIsAccepted(t *testing.T) {
	t.Setenv("BOOTLAB_HOME", t.TempDir())
	dir := t.TempDir()
	spec := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: docs\n"), 0o644))
	ps := filepath.Join(dir, "pull-secret.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dTpw"}}}`), 0o600))

	cmds := docCommands(t)
	require.Greater(t, len(cmds), 40, "the docs show many commands")
	checked := 0
	for _, c := range cmds {
		line := strings.TrimSpace(c.line)
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		// A redirect, a pipe or an || hands bootlab's output or exit
		// code on: the bootlab part is the command.
		line, _, _ = strings.Cut(line, " > ")
		line, _, _ = strings.Cut(line, " || ")
		line, _, _ = strings.Cut(line, " | ")
		if strings.Contains(line, "...") || strings.Contains(line, "<") || line == "bootlab stage" {
			continue // prose about a family of commands, not one command
		}
		line = strings.ReplaceAll(line, "--bootkube FILE", "--bootkube "+filepath.Join("..", "..", "..", "testdata", "bootkube", "4.19", "usr", "local", "bin", "bootkube.sh"))
		// The docs' example bundles are the repository's (testdata/bundles).
		line = strings.ReplaceAll(line, " testdata/", " "+filepath.Join("..", "..", "..", "testdata")+"/")
		line = placeholders.Replace(line + " ")
		line = strings.ReplaceAll(line, "SPEC", spec)
		line = strings.ReplaceAll(line, "PULLSECRET", ps)
		args := strings.Fields(line)[1:]
		checked++

		root := NewCmdRoot(&cmdutil.Factory{Streams: cmdutil.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
		root.InitDefaultCompletionCmd() // cobra adds it only when executing
		cmd, rest, err := root.Find(args)
		require.NoError(t, err, "%s: %q: no such command", c.where, c.line)
		require.NoError(t, cmd.ParseFlags(rest), "%s: %q", c.where, c.line)
		if cmd.Args != nil {
			assert.NoError(t, cmd.Args(cmd, cmd.Flags().Args()), "%s: %q: arguments", c.where, c.line)
		}
		if cmd.Runnable() == false && len(cmd.Flags().Args()) > 0 {
			t.Errorf("%s: %q: %s takes no arguments", c.where, c.line, cmd.CommandPath())
		}
		path := cmd.CommandPath()
		named := len(cmd.Flags().Args()) > 0 || strings.Contains(line, "--all") || strings.Contains(line, "--from") || strings.Contains(line, "--to")
		if path == "bootlab stage run" && !named {
			continue // prose naming the command, not a run of it
		}
		if path == "bootlab stage run" && !strings.Contains(line, "--dry-run") {
			// What a stage run accepts is decided when it runs: run it
			// without touching any node.
			args = append(args, "--dry-run")
		}
		// lab graph draws a lab that is not built from its spec alone:
		// run it too, unless it would write a file.
		graph := path == "bootlab lab graph" && !strings.Contains(line, "--out")
		if path == "bootlab stage explain" || path == "bootlab stage list" || path == "bootlab stage run" || graph {
			var out, errb bytes.Buffer
			code := Run(context.Background(), cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, args)
			assert.Equal(t, 0, code, "%s: %q failed: %s", c.where, c.line, errb.String())
		}
		// lab diagnose reads a bundle and no lab: run it; a diagnosis that
		// found the failure the page shows exits 4.
		if path == "bootlab lab diagnose" && strings.Contains(line, "--bundle") {
			var out, errb bytes.Buffer
			code := Run(context.Background(), cmdutil.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, args)
			assert.Contains(t, []int{cmdutil.ExitOK, cmdutil.ExitCheckFailed}, code, "%s: %q failed: %s", c.where, c.line, errb.String())
		}
	}
	t.Logf("%d documented commands checked", checked)
}
