package diagram

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// Membership is a cluster's members step by step: the etcd membership
// 1 -> 4 -> 3.
type Membership struct {
	Title string
	Steps []MembershipStep
	Note  string
}

// MembershipStep is the membership after one step, and how it came to be.
type MembershipStep struct {
	Label   string
	How     string
	Members []Member
}

// Member is one member.
type Member struct {
	Name string
	Tone Tone
}

// Sizes of the membership picture.
const (
	memberR   = 24.0
	memberGap = 22.0
	panelGap  = 56.0
	panelMinW = 260.0
	panelH    = 210.0
)

// wrap cuts s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// slot is the width each member takes: its circle, or its name.
func (m *Membership) slot() float64 {
	w := 2*memberR + memberGap
	for _, st := range m.Steps {
		for _, mem := range st.Members {
			w = math.Max(w, textWidth(mem.Name, true)+14)
		}
	}
	return w
}

// panelWidth fits step st's members and heading.
func (m *Membership) panelWidth(st MembershipStep) float64 {
	w := math.Max(panelMinW, float64(len(st.Members))*m.slot()+memberGap)
	return math.Max(w, textWidth(st.Label, false)+24)
}

// SVG draws one panel per step, left to right, joined by arrows.
func (m *Membership) SVG() []byte {
	slot := m.slot()
	width := 2*margin - panelGap
	for _, st := range m.Steps {
		width += m.panelWidth(st) + panelGap
	}
	width = math.Max(width, textWidth(m.Note, false)+2*margin)
	top := margin + titleSpace
	height := top + panelH + 56
	s := newSVG(int(math.Ceil(width)), int(math.Ceil(height)), m.Title)
	s.arrowHeads("#57606a")
	s.b.WriteString(`<text x="` + num(margin) + `" y="` + num(margin+16) + `" font-size="16" font-weight="bold" fill="#1f2328">` + esc(m.Title) + "</text>\n")
	x := margin
	for i, st := range m.Steps {
		pw := m.panelWidth(st)
		if i > 0 {
			s.curve(x-panelGap+4, top+88, x-6, top+88, "#57606a")
		}
		s.rect(x, top, pw, panelH, "#f6f8fa", "#8c959f", false)
		s.text(x+pw/2, top+22, "middle", st.Label, false, true, "")
		s.text(x+pw/2, top+42, "middle", fmt.Sprintf("%d member%s", len(st.Members), plural(len(st.Members))), false, false, "#57606a")
		cx0 := x + (pw-float64(len(st.Members))*slot)/2 + slot/2
		for k, mem := range st.Members {
			cx := cx0 + float64(k)*slot
			fill, stroke := mem.Tone.colors()
			s.circle(cx, top+88, memberR, fill, stroke)
			s.text(cx, top+92, "middle", "etcd", false, false, "#57606a")
			s.text(cx, top+130, "middle", mem.Name, true, false, "")
		}
		for k, l := range wrap(st.How, int((pw-24)/sansCharW)) {
			s.text(x+pw/2, top+160+float64(k)*lineH, "middle", l, false, false, "")
		}
		x += pw + panelGap
	}
	s.text(margin, height-24, "start", m.Note, false, false, "#57606a")
	return s.bytes()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Mermaid draws one subgraph per step, left to right.
func (m *Membership) Mermaid() []byte {
	var b bytes.Buffer
	b.WriteString("flowchart LR\n")
	for i, st := range m.Steps {
		fmt.Fprintf(&b, "  subgraph s%d[\"%s: %d member%s\"]\n", i, mermaidText(st.Label), len(st.Members), plural(len(st.Members)))
		for _, mem := range st.Members {
			fmt.Fprintf(&b, "    %s((\"%s\"))\n", id(fmt.Sprintf("s%d_", i), mem.Name), mermaidText(mem.Name))
		}
		b.WriteString("  end\n")
	}
	for i := 1; i < len(m.Steps); i++ {
		fmt.Fprintf(&b, "  s%d -->|\"%s\"| s%d\n", i-1, mermaidText(m.Steps[i].How), i)
	}
	for i, st := range m.Steps {
		for _, mem := range st.Members {
			fill, stroke := mem.Tone.colors()
			fmt.Fprintf(&b, "  style %s fill:%s,stroke:%s\n", id(fmt.Sprintf("s%d_", i), mem.Name), fill, stroke)
		}
	}
	return b.Bytes()
}
