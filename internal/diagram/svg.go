package diagram

import (
	"bytes"
	"fmt"
	"strings"
)

// Format is an output format of a picture.
type Format string

const (
	FormatSVG     Format = "svg"
	FormatDOT     Format = "dot"
	FormatMermaid Format = "mermaid"
)

// Formats are the formats every picture is drawn in, in the order help
// text lists them.
func Formats() []Format { return []Format{FormatSVG, FormatDOT, FormatMermaid} }

// Tone colours a box or bar by who it belongs to.
type Tone int

const (
	ToneNone Tone = iota
	ToneBootstrap
	ToneMasters
	ToneWorkers
	ToneBoth
)

// fill and stroke colours per tone: bootstrap amber, masters blue, workers
// green, both a blue-amber mix, nothing a light grey.
func (t Tone) colors() (fill, stroke string) {
	switch t {
	case ToneBootstrap:
		return "#fff1d6", "#bf7b00"
	case ToneMasters:
		return "#dceeff", "#1f6feb"
	case ToneWorkers:
		return "#dcf5e3", "#1a7f37"
	case ToneBoth:
		return "#efe4ff", "#8250df"
	}
	return "#f3f4f6", "#8c959f"
}

// Character widths of the fonts the pictures use, in pixels per character
// at the sizes used: enough to size boxes around their text without a font
// engine (monospace is exact; the sans estimate is generous).
const (
	monoCharW = 7.3 // 12px monospace
	sansCharW = 7.6 // 13px sans-serif, bold headings included
)

// svg accumulates an SVG document.
type svg struct {
	b bytes.Buffer
}

func newSVG(width, height int, title string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&s.b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&s.b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	return s
}

// rect draws a rounded box.
func (s *svg) rect(x, y, w, h float64, fill, stroke string, dashed bool) {
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s" stroke-width="1.5"%s/>`+"\n",
		num(x), num(y), num(w), num(h), fill, stroke, dash)
}

// text writes one line; anchor is start, middle or end; mono selects the
// monospace font used for addresses and names.
func (s *svg) text(x, y float64, anchor, str string, mono, bold bool, color string) {
	attrs := ""
	if mono {
		attrs += ` font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12"`
	}
	if bold {
		attrs += ` font-weight="bold"`
	}
	if color == "" {
		color = "#1f2328"
	}
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" fill="%s"%s>%s</text>`+"\n", num(x), num(y), anchor, color, attrs, esc(str))
}

// line draws a straight line.
func (s *svg) line(x1, y1, x2, y2 float64, color string, width float64, dashed bool) {
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="5 4"`
	}
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), color, num(width), dash)
}

// curve draws a vertical S-curve from (x1,y1) down to (x2,y2), ending in
// an arrow head.
func (s *svg) curve(x1, y1, x2, y2 float64, color string) {
	dy := (y2 - y1) / 2
	fmt.Fprintf(&s.b, `<path d="M %s %s C %s %s, %s %s, %s %s" fill="none" stroke="%s" stroke-width="1.6" marker-end="url(#arrow-%s)"/>`+"\n",
		num(x1), num(y1), num(x1), num(y1+dy), num(x2), num(y2-dy), num(x2), num(y2), color, strings.TrimPrefix(color, "#"))
}

// arrowHeads defines one arrow marker per colour (SVG 1.1 markers do not
// take their stroke's colour).
func (s *svg) arrowHeads(colors ...string) {
	s.b.WriteString("<defs>\n")
	for _, c := range colors {
		fmt.Fprintf(&s.b, `<marker id="arrow-%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="%s"/></marker>`+"\n",
			strings.TrimPrefix(c, "#"), c)
	}
	s.b.WriteString("</defs>\n")
}

// circle draws a dot.
func (s *svg) circle(cx, cy, r float64, fill, stroke string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n", num(cx), num(cy), num(r), fill, stroke)
}

func (s *svg) bytes() []byte {
	s.b.WriteString("</svg>\n")
	return s.b.Bytes()
}

// num prints a coordinate with at most one decimal, the same on every
// platform.
func num(f float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
}

// esc escapes text for XML.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// textWidth estimates the width of s in the mono or sans font.
func textWidth(s string, mono bool) float64 {
	n := float64(len([]rune(s)))
	if mono {
		return n * monoCharW
	}
	return n * sansCharW
}

// mermaidText makes s safe inside a quoted Mermaid label: Mermaid has no
// escape for a double quote but its #quot; entity.
func mermaidText(s string) string {
	return strings.ReplaceAll(s, `"`, "#quot;")
}

// dotText makes s safe inside a quoted DOT string.
func dotText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`)
}

// id turns a name into an identifier DOT and Mermaid accept unquoted.
func id(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
