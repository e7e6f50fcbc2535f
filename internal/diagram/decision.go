package diagram

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// Decision is a decision tree walked top to bottom: each step a question
// with the checks that answer it; "yes" leads down to the next step, "no"
// to the right, to where to look. The troubleshooting guide's tree (etcd
// healthy? -> API accessible? -> masters joining? -> bootkube
// completing?) is one, drawn bare for the docs or with a diagnosis's
// verdicts.
type Decision struct {
	Title string
	Steps []DecisionStep
	// End is the box after the last "yes" ("Bootstrap complete").
	End  string
	Note string
}

// DecisionStep is one question of the tree.
type DecisionStep struct {
	Question string
	Checks   []DecisionCheck
	// Otherwise are the lines of the "no" box: where to look.
	Otherwise []string
	Verdict   Verdict
}

// DecisionCheck is one check under a question.
type DecisionCheck struct {
	Name    string
	Verdict Verdict
}

// Verdict colours a step or check: none (the bare tree), passed, failed,
// unknown (could not see).
type Verdict int

const (
	VerdictNone Verdict = iota
	VerdictPassed
	VerdictFailed
	VerdictUnknown
)

// mark and colours of a verdict: text colour, box fill, box stroke.
func (v Verdict) style() (mark, text, fill, stroke string) {
	switch v {
	case VerdictPassed:
		return "✓", "#1a7f37", "#dcf5e3", "#1a7f37"
	case VerdictFailed:
		return "✗", "#cf222e", "#ffe5e3", "#cf222e"
	case VerdictUnknown:
		return "?", "#7d4e00", "#fff8c5", "#bf8700"
	}
	return "•", "#1f2328", "#dceeff", "#1f6feb"
}

// Sizes of the decision picture.
const (
	decHeadH   = 30.0
	decStepGap = 46.0
	decNoGap   = 90.0
	decPad     = 12.0
)

// widths are the question column's and the "no" column's.
func (d *Decision) widths() (float64, float64) {
	qw := math.Max(220, textWidth(d.End, false)+2*decPad)
	nw := 200.0
	for _, st := range d.Steps {
		qw = math.Max(qw, textWidth(st.Question, false)+2*decPad)
		for _, c := range st.Checks {
			qw = math.Max(qw, textWidth("✓ "+c.Name, true)+2*decPad)
		}
		for _, l := range st.Otherwise {
			nw = math.Max(nw, textWidth(l, false)+2*decPad)
		}
	}
	return qw, nw
}

// stepH is the height of step st's box.
func stepH(st DecisionStep) float64 {
	return decHeadH + float64(len(st.Checks))*lineH + 8
}

// SVG draws the tree.
func (d *Decision) SVG() []byte {
	qw, nw := d.widths()
	top := margin + titleSpace
	height := top
	for _, st := range d.Steps {
		height += stepH(st) + decStepGap
	}
	height += 40 + 56
	width := math.Max(2*margin+qw+decNoGap+nw, textWidth(d.Note, false)+2*margin)
	s := newSVG(int(math.Ceil(width)), int(math.Ceil(height)), d.Title)
	s.arrowHeads("#57606a", "#cf222e")
	s.b.WriteString(`<text x="` + num(margin) + `" y="` + num(margin+16) + `" font-size="16" font-weight="bold" fill="#1f2328">` + esc(d.Title) + "</text>\n")
	y := top
	nx := margin + qw + decNoGap
	for _, st := range d.Steps {
		h := stepH(st)
		d.drawStep(s, st, margin, y, qw, h)
		noColor := "#57606a"
		if st.Verdict == VerdictFailed {
			noColor = "#cf222e"
		}
		nh := float64(len(st.Otherwise))*lineH + 2*decPad - 4
		arrow(s, margin+qw, y+decHeadH/2, nx-2, y+decHeadH/2, noColor)
		s.text(margin+qw+decNoGap/2, y+decHeadH/2-6, "middle", "no", false, true, noColor)
		fill, stroke := "#fff1d6", "#bf7b00"
		if st.Verdict == VerdictFailed {
			fill, stroke = "#ffe5e3", "#cf222e"
		}
		s.rect(nx, y, nw, nh, fill, stroke, st.Verdict != VerdictFailed && st.Verdict != VerdictNone)
		for k, l := range st.Otherwise {
			s.text(nx+decPad, y+decPad+12+float64(k)*lineH, "start", l, false, false, "")
		}
		y += h
		s.curve(margin+qw/2, y+2, margin+qw/2, y+decStepGap-2, "#57606a")
		s.text(margin+qw/2+8, y+decStepGap/2+4, "start", "yes", false, true, "#57606a")
		y += decStepGap
	}
	s.rect(margin, y, qw, 40, "#dcf5e3", "#1a7f37", false)
	s.text(margin+qw/2, y+25, "middle", d.End, false, true, "")
	s.text(margin, height-24, "start", d.Note, false, false, "#57606a")
	return s.bytes()
}

// arrow draws a straight arrow from (x1,y1) to (x2,y2).
func arrow(s *svg, x1, y1, x2, y2 float64, color string) {
	fmt.Fprintf(&s.b, `<path d="M %s %s L %s %s" fill="none" stroke="%s" stroke-width="1.6" marker-end="url(#arrow-%s)"/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), color, strings.TrimPrefix(color, "#"))
}

// drawStep draws one question box with its checks.
func (d *Decision) drawStep(s *svg, st DecisionStep, x, y, w, h float64) {
	_, text, fill, stroke := st.Verdict.style()
	s.rect(x, y, w, h, fill, stroke, false)
	s.text(x+decPad, y+20, "start", st.Question, false, true, text)
	for k, c := range st.Checks {
		mark, color, _, _ := c.Verdict.style()
		s.text(x+decPad, y+decHeadH+12+float64(k)*lineH, "start", mark+" "+c.Name, true, false, color)
	}
}

// Mermaid draws the tree as a flowchart, top to bottom, as the guide does.
func (d *Decision) Mermaid() []byte {
	var b bytes.Buffer
	b.WriteString("flowchart TD\n")
	for i, st := range d.Steps {
		lines := []string{"<b>" + st.Question + "</b>"}
		for _, c := range st.Checks {
			mark, _, _, _ := c.Verdict.style()
			lines = append(lines, mark+" "+c.Name)
		}
		fmt.Fprintf(&b, "  Q%d[\"%s\"]\n", i, mermaidText(strings.Join(lines, "<br/>")))
		fmt.Fprintf(&b, "  E%d[\"%s\"]\n", i, mermaidText(strings.Join(st.Otherwise, "<br/>")))
	}
	fmt.Fprintf(&b, "  END([\"%s\"])\n", mermaidText(d.End))
	for i := range d.Steps {
		fmt.Fprintf(&b, "  Q%d -->|no| E%d\n", i, i)
		next := "END"
		if i+1 < len(d.Steps) {
			next = fmt.Sprintf("Q%d", i+1)
		}
		fmt.Fprintf(&b, "  Q%d -->|yes| %s\n", i, next)
	}
	for i, st := range d.Steps {
		_, _, fill, stroke := st.Verdict.style()
		fmt.Fprintf(&b, "  style Q%d fill:%s,stroke:%s\n", i, fill, stroke)
		fmt.Fprintf(&b, "  style E%d fill:#fff1d6,stroke:#bf7b00\n", i)
	}
	b.WriteString("  style END fill:#dcf5e3,stroke:#1a7f37\n")
	return b.Bytes()
}
