package markdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// Output is where a page goes and what is known about it.
type Output struct {
	// Out receives the page (stdout); ErrOut the pager's own errors.
	Out, ErrOut io.Writer
	// TTY is true when Out is a terminal.
	TTY bool
	// Width and Height are the terminal's size in cells; 0 when unknown.
	// An unknown height never starts a pager.
	Width, Height int
	// Environ is the environment (os.Environ() form) read for NO_COLOR,
	// TERM, GLAMOUR_STYLE, BOOTLAB_PAGER, PAGER and COLUMNS.
	Environ []string
	// LookPath finds the default pager; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// SystemOutput describes the process's stdout, its terminal size and
// environment.
func SystemOutput(out, errOut io.Writer, tty bool) Output {
	o := Output{Out: out, ErrOut: errOut, TTY: tty, Environ: os.Environ()}
	if f, ok := out.(interface{ Fd() uintptr }); ok && tty {
		if w, h, err := term.GetSize(int(f.Fd())); err == nil {
			o.Width, o.Height = w, h
		}
	}
	return o
}

// Mode is how a page is shown.
type Mode int

const (
	// Plain is the markdown as written: piped, NO_COLOR, TERM=dumb or asked for.
	Plain Mode = iota
	// Styled is rendered with glamour for a terminal.
	Styled
)

// ModeFor picks the mode for an output: styled only on a terminal that can
// show escape codes and was not asked for no colour (no-color.org).
func ModeFor(o Output) Mode {
	env := envMap(o.Environ)
	if !o.TTY || env["NO_COLOR"] != "" || env["TERM"] == "dumb" {
		return Plain
	}
	return Styled
}

// Show prints a markdown page: rendered and wrapped to the terminal when
// ModeFor says so (plain forces the markdown as written), then through a
// pager when it is longer than the screen.
func Show(ctx context.Context, o Output, page []byte, plain bool) error {
	text := string(page)
	env := envMap(o.Environ)
	if !plain && ModeFor(o) == Styled {
		style := env["GLAMOUR_STYLE"]
		if style == "" {
			style = DefaultStyle
		}
		var err error
		text, err = Render(page, RenderOptions{
			Style:   style,
			Width:   wrapWidth(o, env),
			Profile: colorprofile.Env(o.Environ),
		})
		if err != nil {
			return err
		}
	}
	if pager := PagerFor(o, text); pager != "" {
		err := runPager(ctx, o, pager, text)
		if err == nil || !errors.Is(err, errPagerStart) {
			return err
		}
		// The pager could not run: say so once, the page is still worth printing.
		fmt.Fprintf(o.ErrOut, "%v; printing the page instead (set BOOTLAB_PAGER to another pager, or to \"\" for none)\n", err)
	}
	_, err := io.WriteString(o.Out, text)
	return err
}

// wrapWidth is the terminal width (or $COLUMNS), capped at MaxWidth.
func wrapWidth(o Output, env map[string]string) int {
	w := o.Width
	if w <= 0 {
		if _, err := fmt.Sscan(env["COLUMNS"], &w); err != nil || w <= 0 {
			w = DefaultWidth
		}
	}
	return min(w, MaxWidth)
}

// PagerFor returns the pager command for text, or "" to print it directly:
// only on a terminal of known height, only when text is taller than the
// screen. $BOOTLAB_PAGER wins, then $PAGER, then `less -R` if installed
// (not on TERM=dumb, where less cannot draw). A pager set to "" or "cat"
// turns paging off.
func PagerFor(o Output, text string) string {
	if !o.TTY || o.Height <= 0 || lineCount(text, o.Width) < o.Height {
		return ""
	}
	env := envMap(o.Environ)
	for _, name := range []string{"BOOTLAB_PAGER", "PAGER"} {
		if v, ok := env[name]; ok {
			if v = strings.TrimSpace(v); v == "cat" {
				return ""
			}
			return strings.TrimSpace(v)
		}
	}
	if env["TERM"] == "dumb" {
		return ""
	}
	lookPath := o.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if _, err := lookPath("less"); err != nil {
		return ""
	}
	return "less -R"
}

// lineCount is the number of screen rows text takes at width columns.
func lineCount(text string, width int) int {
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		w := ansi.StringWidth(line)
		if width <= 0 || w <= width {
			n++
			continue
		}
		n += (w + width - 1) / width
	}
	return n
}

var errPagerStart = errors.New("pager did not start")

// runPager feeds text to the pager on the terminal. A pager that cannot be
// started, or that the shell cannot find (exit 126/127), returns
// errPagerStart so the caller prints the page itself. Once started the
// pager is not stopped when ctx ends: Ctrl-C reaches it too and is its to
// handle (less stops a search with it), as under git; killing it would
// leave the terminal in its raw mode.
func runPager(ctx context.Context, o Output, pager, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var cmd *exec.Cmd
	if strings.ContainsAny(pager, "|&;<>()$`\\\"'*?[]#~=%{}") {
		cmd = exec.Command("sh", "-c", pager)
	} else {
		f := strings.Fields(pager)
		cmd = exec.Command(f[0], f[1:]...)
	}
	cmd.Stdin = strings.NewReader(text)
	cmd.Stdout, cmd.Stderr = o.Out, o.ErrOut
	cmd.Env = o.Environ
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if _, ok := envMap(o.Environ)["LESS"]; !ok {
		// As git does: quit if one screen, keep colours, leave the page on screen.
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %q: %w", errPagerStart, pager, err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && (exit.ExitCode() == 126 || exit.ExitCode() == 127) {
		return fmt.Errorf("%w: %q exited %d", errPagerStart, pager, exit.ExitCode())
	}
	// Quitting a pager early, or its own failure, is not the page's failure.
	return nil
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
