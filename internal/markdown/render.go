package markdown

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"charm.land/glamour/v2"
	"github.com/charmbracelet/colorprofile"
)

// Default rendering choices.
const (
	// DefaultStyle is the glamour style used unless GLAMOUR_STYLE names another.
	DefaultStyle = "dark"
	// DefaultWidth wraps text when the terminal width is unknown.
	DefaultWidth = 80
	// MaxWidth caps the wrap width on wide terminals: long lines are hard to read.
	MaxWidth = 120
)

// RenderOptions choose how Render draws a page. The zero value is the dark
// style at 80 columns in true colour.
type RenderOptions struct {
	// Style is a glamour standard style: dark, light, ascii, notty, dracula,
	// pink or tokyo-night.
	Style string
	// Width is the column at which text wraps.
	Width int
	// Profile is the colour depth of the terminal; colours are downsampled
	// to it. colorprofile.NoTTY strips every escape code.
	Profile colorprofile.Profile
}

// Render renders markdown for a terminal: headings styled, code fences drawn
// as indented blocks, inline code without its backticks, text word-wrapped.
// Code blocks are never wrapped (a command copied from one must run, `\`
// continuations included) and no line ends in padding.
func Render(md []byte, opts RenderOptions) (string, error) {
	if opts.Style == "" {
		opts.Style = DefaultStyle
	}
	if opts.Width <= 0 {
		opts.Width = DefaultWidth
	}
	r, err := glamour.NewTermRenderer(
		glamour.WithStandardStyle(opts.Style),
		glamour.WithWordWrap(opts.Width),
	)
	if err != nil {
		return "", fmt.Errorf("markdown style %q (GLAMOUR_STYLE): %w; use dark, light, ascii, notty, dracula, pink or tokyo-night", opts.Style, err)
	}
	if opts.Profile == colorprofile.Unknown {
		opts.Profile = colorprofile.TrueColor
	}
	md, blocks := holdCodeBlocks(md)
	out, err := r.RenderBytes(md)
	if err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	out = []byte(trimPadding(putCodeBlocks(string(out), blocks)))
	var b bytes.Buffer
	// glamour writes true colour; the terminal may know fewer colours.
	w := &colorprofile.Writer{Forward: &b, Profile: opts.Profile}
	if _, err := w.Write(out); err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	return b.String(), nil
}

// fence is a fenced code block: its opening line, body and closing line.
var fence = regexp.MustCompile("(?ms)^```[^\n]*\n(.*?)^```[ \t]*$")

// codeToken marks where code block N was; one word, so nothing wraps it.
const codeToken = "BOOTLABCODEBLOCK"

// holdCodeBlocks replaces each fenced code block by a paragraph holding a
// token, for glamour to lay out the rest around it, and returns the bodies.
func holdCodeBlocks(md []byte) ([]byte, []string) {
	var blocks []string
	out := fence.ReplaceAllStringFunc(string(md), func(m string) string {
		body := fence.FindStringSubmatch(m)[1]
		blocks = append(blocks, strings.TrimSuffix(body, "\n"))
		return fmt.Sprintf("%s%d", codeToken, len(blocks)-1)
	})
	return []byte(out), blocks
}

// tokenLine is a rendered line holding a code block's token: its margin
// (escape codes and spaces) and the block's number.
var tokenLine = regexp.MustCompile(`(?m)^((?:\x1b\[[0-9;]*m| )*)` + codeToken + `(\d+)(?:\x1b\[[0-9;]*m| )*$`)

// putCodeBlocks puts each block back where its token was rendered, line by
// line as written, indented two columns more than the text around it.
func putCodeBlocks(rendered string, blocks []string) string {
	return tokenLine.ReplaceAllStringFunc(rendered, func(line string) string {
		m := tokenLine.FindStringSubmatch(line)
		var n int
		if _, err := fmt.Sscan(m[2], &n); err != nil || n >= len(blocks) {
			return line
		}
		indent := strings.Repeat(" ", strings.Count(stripSGR(m[1]), " ")+2)
		var b strings.Builder
		for i, l := range strings.Split(blocks[n], "\n") {
			if i > 0 {
				b.WriteString("\n")
			}
			if l != "" {
				b.WriteString(indent + l)
			}
		}
		return b.String()
	})
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

func stripSGR(s string) string { return sgr.ReplaceAllString(s, "") }

// trailing is what ends a line after its text: spaces and escape codes.
var trailing = regexp.MustCompile(`(?m)(?:[ \t]|\x1b\[[0-9;]*m)+$`)

// trimPadding drops the spaces glamour pads each line with to the wrap
// width, keeping the escape codes among them (a style reset).
func trimPadding(s string) string {
	return trailing.ReplaceAllStringFunc(s, func(tail string) string {
		return strings.Join(sgr.FindAllString(tail, -1), "")
	})
}
