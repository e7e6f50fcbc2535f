package markdown

import (
	"bytes"
	"fmt"

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
	out, err := r.RenderBytes(md)
	if err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	var b bytes.Buffer
	// glamour writes true colour; the terminal may know fewer colours.
	w := &colorprofile.Writer{Forward: &b, Profile: opts.Profile}
	if _, err := w.Write(out); err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	return b.String(), nil
}
