package markdown

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/docs"
	"github.com/bootlab/bootlab/internal/testutil"
)

const goldenDir = "../../testdata/markdown"

func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join(goldenDir, name), []byte(got))
}

func fixture(t *testing.T) []byte {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(goldenDir, "page.md"))
	require.NoError(t, err)
	return page
}

// Styles and profiles are chosen explicitly so the goldens do not depend on
// the terminal or environment the tests run in.
func TestRenderGolden(t *testing.T) {
	t.Parallel()
	page := fixture(t)
	for _, tc := range []struct {
		golden string
		opts   RenderOptions
	}{
		{"page.dark-60-truecolor.golden", RenderOptions{Style: "dark", Width: 60, Profile: colorprofile.TrueColor}},
		{"page.light-100-ansi.golden", RenderOptions{Style: "light", Width: 100, Profile: colorprofile.ANSI}},
		{"page.ascii-60-notty.golden", RenderOptions{Style: "ascii", Width: 60, Profile: colorprofile.NoTTY}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			got, err := Render(page, tc.opts)
			require.NoError(t, err)
			golden(t, tc.golden, got)
			assertClean(t, got, tc.opts.Width)
			assert.Contains(t, ansi.Strip(got), "/opt/openshift/sample-stage-with-a-long-name.done", "inline code moved whole to the next line")
			if tc.opts.Profile == colorprofile.NoTTY {
				assert.NotContains(t, got, "\x1b", "NoTTY has no escape codes")
			} else {
				assert.Contains(t, got, "\x1b[", "a colour profile keeps styling")
			}
			if tc.opts.Profile == colorprofile.ANSI {
				assert.NotRegexp(t, `\x1b\[[0-9;]*[34]8;[25];`, got, "ANSI has no 256 or true colours")
			}
		})
	}
}

// assertClean checks what a reader sees: no fence lines, no backticks left
// by inline code (the fixture has none inside its fences), no line wider
// than the wrap width but code, every code line whole as written (a `\`
// continuation copied from it runs), no line padded with trailing spaces.
func assertClean(t *testing.T, rendered string, width int) {
	t.Helper()
	text := ansi.Strip(rendered)
	assert.NotContains(t, text, "```")
	assert.NotContains(t, text, "`")
	code := map[string]bool{}
	for _, l := range codeLines(t) {
		code[strings.TrimSpace(l)] = true
		assert.Contains(t, text, "\n    "+l+"\n", "code line kept whole, indented, never wrapped")
	}
	for _, line := range strings.Split(text, "\n") {
		if !code[strings.TrimSpace(line)] {
			assert.LessOrEqual(t, ansi.StringWidth(line), width, "line wider than %d: %q", width, line)
		}
		assert.Equal(t, strings.TrimRight(line, " \t"), line, "line padded with trailing spaces: %q", line)
	}
	for _, line := range strings.Split(rendered, "\n") {
		assert.False(t, strings.HasSuffix(line, " "), "raw line ends in a space: %q", line)
	}
	assert.Contains(t, text, `bootkube_podman_run --name sample --volume "$PWD:/assets:z" "${SAMPLE_IMAGE}" \`+"\n", "the continuation stays on its line")
}

// codeLines are the fixture's non-empty lines inside fences, as written.
func codeLines(t *testing.T) []string {
	t.Helper()
	var out []string
	in := false
	for _, l := range strings.Split(string(fixture(t)), "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if in && strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestShowPlainGolden(t *testing.T) {
	t.Parallel()
	page := fixture(t)
	for _, o := range []Output{
		{TTY: false, Width: 60, Height: 5},
		{TTY: true, Width: 60, Environ: []string{"TERM=xterm-256color", "NO_COLOR=1"}},
		{TTY: true, Width: 60, Environ: []string{"TERM=dumb"}},
	} {
		var out bytes.Buffer
		o.Out, o.ErrOut = &out, &out
		require.NoError(t, Show(context.Background(), o, page, false))
		golden(t, "page.plain.golden", out.String())
		assert.Equal(t, string(page), out.String(), "plain is the markdown as written")
	}
	var out bytes.Buffer
	o := Output{Out: &out, TTY: true, Width: 60, Environ: []string{"TERM=xterm-256color"}}
	require.NoError(t, Show(context.Background(), o, page, true))
	assert.Equal(t, string(page), out.String(), "plain on request")
}

func TestShowStyled(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := Output{Out: &out, TTY: true, Width: 60, Environ: []string{"TERM=xterm-256color", "COLORTERM=truecolor", "GLAMOUR_STYLE=dark"}}
	require.NoError(t, Show(context.Background(), o, fixture(t), false))
	want, err := Render(fixture(t), RenderOptions{Style: "dark", Width: 60, Profile: colorprofile.TrueColor})
	require.NoError(t, err)
	assert.Equal(t, want, out.String())

	out.Reset()
	o.Width = 0
	o.Environ = []string{"TERM=xterm", "COLUMNS=50"}
	require.NoError(t, Show(context.Background(), o, fixture(t), false))
	assertClean(t, out.String(), 50)
	assert.NotRegexp(t, `\x1b\[[0-9;]*[34]8;2;`, out.String(), "TERM=xterm gets no true colour")

	o.Environ = []string{"TERM=xterm", "GLAMOUR_STYLE=neon"}
	err = Show(context.Background(), o, fixture(t), false)
	assert.ErrorContains(t, err, `"neon" (GLAMOUR_STYLE)`)
}

// Every page `stage explain` prints renders without stray fences or
// backticks: the only backticks left are those inside its code blocks.
func TestRenderDocsPages(t *testing.T) {
	t.Parallel()
	fence := regexp.MustCompile("(?ms)^```[^\n]*\n(.*?)^```")
	pages, err := fs.Glob(docs.Stages, "stages/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, name := range pages {
		page, err := fs.ReadFile(docs.Stages, name)
		require.NoError(t, err)
		inFences := 0
		for _, m := range fence.FindAllStringSubmatch(string(page), -1) {
			inFences += strings.Count(m[1], "`")
		}
		got, err := Render(page, RenderOptions{Width: 80})
		require.NoError(t, err, name)
		text := ansi.Strip(got)
		assert.NotContains(t, text, "```", name)
		assert.Equal(t, inFences, strings.Count(text, "`"), "%s: backticks outside code blocks", name)
	}
}

func TestModeFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Output
		want Mode
	}{
		{Output{TTY: true, Environ: []string{"TERM=xterm-256color"}}, Styled},
		{Output{TTY: false, Environ: []string{"TERM=xterm-256color"}}, Plain},
		{Output{TTY: true, Environ: []string{"TERM=xterm-256color", "NO_COLOR=1"}}, Plain},
		{Output{TTY: true, Environ: []string{"TERM=xterm-256color", "NO_COLOR="}}, Styled},
		{Output{TTY: true, Environ: []string{"TERM=dumb"}}, Plain},
	} {
		assert.Equal(t, tc.want, ModeFor(tc.o), "%+v", tc.o)
	}
}

func TestPagerFor(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("line\n", 30)
	haveLess := func(string) (string, error) { return "/usr/bin/less", nil }
	noLess := func(string) (string, error) { return "", errors.New("not found") }
	for _, tc := range []struct {
		name string
		o    Output
		text string
		want string
	}{
		{"default less", Output{TTY: true, Height: 24, LookPath: haveLess}, long, "less -R"},
		{"fits the screen", Output{TTY: true, Height: 24, LookPath: haveLess}, strings.Repeat("l\n", 23), ""},
		{"wrapped lines count", Output{TTY: true, Height: 24, Width: 10, LookPath: haveLess}, strings.Repeat(strings.Repeat("x", 25)+"\n", 8), "less -R"},
		{"piped", Output{TTY: false, Height: 24, LookPath: haveLess}, long, ""},
		{"unknown height", Output{TTY: true, LookPath: haveLess}, long, ""},
		{"no less", Output{TTY: true, Height: 24, LookPath: noLess}, long, ""},
		{"PAGER", Output{TTY: true, Height: 24, LookPath: noLess, Environ: []string{"PAGER=more"}}, long, "more"},
		{"BOOTLAB_PAGER wins", Output{TTY: true, Height: 24, Environ: []string{"PAGER=more", "BOOTLAB_PAGER=most -s"}}, long, "most -s"},
		{"BOOTLAB_PAGER empty is off", Output{TTY: true, Height: 24, LookPath: haveLess, Environ: []string{"PAGER=more", "BOOTLAB_PAGER="}}, long, ""},
		{"cat is off", Output{TTY: true, Height: 24, LookPath: haveLess, Environ: []string{"PAGER=cat"}}, long, ""},
		{"dumb terminal, no default", Output{TTY: true, Height: 24, LookPath: haveLess, Environ: []string{"TERM=dumb"}}, long, ""},
		{"dumb terminal, explicit", Output{TTY: true, Height: 24, Environ: []string{"TERM=dumb", "PAGER=more"}}, long, "more"},
	} {
		assert.Equal(t, tc.want, PagerFor(tc.o, tc.text), tc.name)
	}
}

// The pager is a real process reading the page on stdin and writing to Out.
func TestShowPager(t *testing.T) {
	t.Parallel()
	page := []byte(strings.Repeat("a line\n", 30))
	run := func(pager string, extra ...string) (string, string) {
		var out, errOut bytes.Buffer
		o := Output{Out: &out, ErrOut: &errOut, TTY: true, Height: 10,
			Environ: append([]string{"TERM=dumb", "PATH=" + os.Getenv("PATH"), "BOOTLAB_PAGER=" + pager}, extra...)}
		require.NoError(t, Show(context.Background(), o, page, false))
		return out.String(), errOut.String()
	}

	out, _ := run(`sed 's/^/P:/'`)
	assert.Equal(t, strings.Repeat("P:a line\n", 30), out, "through the pager, via sh")

	out, _ = run(`env`)
	assert.Contains(t, out, "LESS=FRX\n", "less gets git's defaults")
	out, _ = run(`env`, "LESS=-S")
	assert.NotContains(t, out, "LESS=FRX", "a user's LESS is kept")

	out, errOut := run("bootlab-no-such-pager -x")
	assert.Equal(t, string(page), out, "a pager that cannot start falls back to printing")
	assert.Contains(t, errOut, `"bootlab-no-such-pager -x"`)

	out, errOut = run("bootlab-no-such-pager | cat; exit 127")
	assert.Equal(t, string(page), out, "a pager the shell cannot find falls back to printing")
	assert.Contains(t, errOut, "exited 127")

	out, _ = run("head -n 2")
	assert.Equal(t, "a line\na line\n", out, "a pager quitting early is no error")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b bytes.Buffer
	o := Output{Out: &b, ErrOut: &b, TTY: true, Height: 10, Environ: []string{"TERM=dumb", "BOOTLAB_PAGER=cat -n"}}
	assert.ErrorIs(t, Show(ctx, o, page, false), context.Canceled, "no pager after an interrupt")
	assert.Empty(t, b.String())
}

func TestSystemOutput(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	o := SystemOutput(&b, &b, true)
	assert.Zero(t, o.Height, "a buffer has no size: never paged")
	assert.NotEmpty(t, o.Environ)
}
