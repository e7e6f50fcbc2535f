package diagram

import (
	"bytes"
	"fmt"
	"math"
	"slices"
)

// Modules is a map of packages: a box per package naming what it plays,
// an arrow per import between them, importers above what they import
// (the guest cluster's module, drawn from its real import graph). An
// import another path of arrows already implies is not drawn.
type Modules struct {
	Title string
	// Packages are the boxes; Imports the arrows, by package Name.
	Packages []Package
	Imports  []Import
	Note     string
}

// Package is one box: its directory and what it plays, the files worth
// naming in it, the tone of the nodes that run it.
type Package struct {
	Name  string
	Plays string
	Files []string
	Tone  Tone
}

// Import is an arrow: From imports To.
type Import struct{ From, To string }

// Sizes of the module map.
const (
	pkgGap   = 16.0
	pkgMinW  = 150.0
	layerGap = 46.0
)

// layers puts each package one row below its lowest importer (the longest
// import path from a package nobody imports), in the given order within a
// row, so an arrow always points down.
func (m *Modules) layers() [][]Package {
	depth := map[string]int{}
	for range m.Packages { // a path is at most len(Packages) long
		changed := false
		for _, e := range m.Imports {
			if d := depth[e.From] + 1; d > depth[e.To] {
				depth[e.To], changed = d, true
			}
		}
		if !changed {
			break
		}
	}
	var out [][]Package
	for _, p := range m.Packages {
		d := depth[p.Name]
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], p)
	}
	return slices.DeleteFunc(out, func(l []Package) bool { return len(l) == 0 })
}

// drawn are the imports no longer path implies (a transitive reduction):
// the map reads top-down without an arrow through every box.
func (m *Modules) drawn() []Import {
	next := map[string][]string{}
	for _, e := range m.Imports {
		next[e.From] = append(next[e.From], e.To)
	}
	// reaches says whether to is reachable from from in two steps or more.
	reaches := func(from, to string) bool {
		seen := map[string]bool{}
		var stack []string
		for _, n := range next[from] {
			if n != to {
				stack = append(stack, n)
			}
		}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n == to {
				return true
			}
			if !seen[n] {
				seen[n] = true
				stack = append(stack, next[n]...)
			}
		}
		return false
	}
	var out []Import
	for _, e := range m.Imports {
		if !reaches(e.From, e.To) {
			out = append(out, e)
		}
	}
	return out
}

// lines are a box's text: its name (bold), what it plays, its files.
func (p Package) lines() []string {
	out := []string{p.Name}
	if p.Plays != "" {
		out = append(out, wrap(p.Plays, 34)...)
	}
	return append(out, p.Files...)
}

func (p Package) width() float64 {
	w := pkgMinW
	for i, l := range p.lines() {
		w = math.Max(w, textWidth(l, i == 0 || i > len(p.lines())-1-len(p.Files))+20)
	}
	return w
}

func (p Package) height() float64 { return float64(len(p.lines()))*lineH + 14 }

// box is a package's place in the picture.
type box struct{ x, y, w, h float64 }

// place lays the rows out, centred, and returns each box and the size.
func (m *Modules) place() (map[string]box, float64, float64) {
	rows := m.layers()
	width, rowW := 0.0, make([]float64, len(rows))
	for i, row := range rows {
		for _, p := range row {
			rowW[i] += p.width() + pkgGap
		}
		rowW[i] -= pkgGap
		width = math.Max(width, rowW[i])
	}
	width = math.Max(width+2*margin, textWidth(m.Note, false)+2*margin)
	boxes := map[string]box{}
	y := margin + titleSpace
	for i, row := range rows {
		h := 0.0
		for _, p := range row {
			h = math.Max(h, p.height())
		}
		x := (width - rowW[i]) / 2
		for _, p := range row {
			boxes[p.Name] = box{x, y, p.width(), h}
			x += p.width() + pkgGap
		}
		y += h + layerGap
	}
	return boxes, width, y - layerGap + 48
}

// SVG draws the rows top to bottom, each import an arrow from the bottom
// of its importer to the top of what it imports.
func (m *Modules) SVG() []byte {
	boxes, width, height := m.place()
	s := newSVG(int(math.Ceil(width)), int(math.Ceil(height)), m.Title)
	const arrow = "#8c959f"
	s.arrowHeads(arrow)
	s.b.WriteString(`<text x="` + num(margin) + `" y="` + num(margin+16) + `" font-size="16" font-weight="bold" fill="#1f2328">` + esc(m.Title) + "</text>\n")
	for _, e := range m.drawn() {
		from, ok1 := boxes[e.From]
		to, ok2 := boxes[e.To]
		if ok1 && ok2 {
			s.curve(from.x+from.w/2, from.y+from.h, to.x+to.w/2, to.y-2, arrow)
		}
	}
	for _, p := range m.Packages {
		b := boxes[p.Name]
		fill, stroke := p.Tone.colors()
		s.rect(b.x, b.y, b.w, b.h, fill, stroke, false)
		for i, l := range p.lines() {
			file := i > len(p.lines())-1-len(p.Files)
			color := ""
			if i > 0 && !file {
				color = "#57606a"
			}
			s.text(b.x+10, b.y+20+float64(i)*lineH, "start", l, i == 0 || file, i == 0, color)
		}
	}
	s.text(margin, height-20, "start", m.Note, false, false, "#57606a")
	return s.bytes()
}

// Mermaid draws the same map as a top-down flowchart.
func (m *Modules) Mermaid() []byte {
	var b bytes.Buffer
	b.WriteString("flowchart TD\n")
	for _, p := range m.Packages {
		label := mermaidText(p.Name)
		if p.Plays != "" {
			label += "<br/>" + mermaidText(p.Plays)
		}
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", id("p_", p.Name), label)
	}
	for _, e := range m.drawn() {
		fmt.Fprintf(&b, "  %s --> %s\n", id("p_", e.From), id("p_", e.To))
	}
	return b.Bytes()
}
