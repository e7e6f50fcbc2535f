package diagram

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Timeline is a table drawn as lanes: one row per step, one lane per
// thing that changes; a run of equal cells in a lane is one bar.
type Timeline struct {
	Title string
	// Heading names the rows' column; Lanes name the others.
	Heading string
	Lanes   []string
	Rows    []TimelineRow
	Note    string
}

// TimelineRow is one step and a cell per lane.
type TimelineRow struct {
	Label string
	Cells []Cell
}

// Cell is a lane's value at a row.
type Cell struct {
	Text string
	Tone Tone
}

// Sizes of the timeline picture.
const (
	rowH     = 30.0
	headH    = 40.0
	laneGap  = 8.0
	laneMinW = 150.0
)

// bars are the runs of equal cells in lane j: first row, last row, cell.
func (t *Timeline) bars(j int) [][3]int {
	var out [][3]int
	for i := 0; i < len(t.Rows); {
		k := i
		for k+1 < len(t.Rows) && t.Rows[k+1].Cells[j] == t.Rows[i].Cells[j] {
			k++
		}
		out = append(out, [3]int{i, k, i})
		i = k + 1
	}
	return out
}

// widths are the label column's width and each lane's.
func (t *Timeline) widths() (float64, []float64) {
	label := textWidth(t.Heading, false) + 20
	lanes := make([]float64, len(t.Lanes))
	for j, name := range t.Lanes {
		lanes[j] = math.Max(laneMinW, textWidth(name, false)+20)
	}
	for _, r := range t.Rows {
		label = math.Max(label, textWidth(r.Label, true)+20)
		for j, c := range r.Cells {
			lanes[j] = math.Max(lanes[j], textWidth(c.Text, false)+24)
		}
	}
	return label, lanes
}

// SVG draws the timeline.
func (t *Timeline) SVG() []byte {
	labelW, laneW := t.widths()
	width := 2*margin + labelW
	for _, w := range laneW {
		width += w + laneGap
	}
	top := margin + titleSpace
	height := top + headH + float64(len(t.Rows))*rowH + 56
	width = math.Max(width, textWidth(t.Note, false)+2*margin)
	s := newSVG(int(math.Ceil(width)), int(math.Ceil(height)), t.Title)
	s.b.WriteString(`<text x="` + num(margin) + `" y="` + num(margin+16) + `" font-size="16" font-weight="bold" fill="#1f2328">` + esc(t.Title) + "</text>\n")
	s.text(margin, top+24, "start", t.Heading, false, true, "")
	for i, r := range t.Rows {
		y := top + headH + float64(i)*rowH
		if i%2 == 0 {
			s.rect(margin, y, width-2*margin, rowH, "#fafbfc", "#fafbfc", false)
		}
		s.text(margin+8, y+20, "start", r.Label, true, false, "")
	}
	x := margin + labelW
	for j, name := range t.Lanes {
		s.text(x+laneW[j]/2, top+24, "middle", name, false, true, "")
		for _, b := range t.bars(j) {
			c := t.Rows[b[2]].Cells[j]
			y := top + headH + float64(b[0])*rowH + 3
			h := float64(b[1]-b[0]+1)*rowH - 6
			fill, stroke := c.Tone.colors()
			s.rect(x, y, laneW[j], h, fill, stroke, false)
			s.text(x+laneW[j]/2, y+h/2+4.5, "middle", c.Text, false, false, "")
		}
		x += laneW[j] + laneGap
	}
	s.text(margin, height-24, "start", t.Note, false, false, "#57606a")
	return s.bytes()
}

// Mermaid draws the timeline as a flowchart: one box per run of rows
// whose cells are all equal, top to bottom.
func (t *Timeline) Mermaid() []byte {
	var b bytes.Buffer
	b.WriteString("flowchart TD\n")
	var ids []string
	for i := 0; i < len(t.Rows); {
		k := i
		for k+1 < len(t.Rows) && slices.Equal(t.Rows[k+1].Cells, t.Rows[i].Cells) {
			k++
		}
		label := t.Rows[i].Label
		if k > i {
			label += " to " + t.Rows[k].Label
		}
		lines := []string{"<b>" + label + "</b>"}
		for j, c := range t.Rows[i].Cells {
			lines = append(lines, t.Lanes[j]+": "+c.Text)
		}
		nid := fmt.Sprintf("t%d", len(ids))
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", nid, mermaidText(strings.Join(lines, "<br/>")))
		ids = append(ids, nid)
		i = k + 1
	}
	if len(ids) > 1 {
		fmt.Fprintf(&b, "  %s\n", strings.Join(ids, " --> "))
	}
	return b.Bytes()
}
