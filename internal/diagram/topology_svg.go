package diagram

import (
	"math"
	"strings"
)

// Sizes of the topology picture, in pixels.
const (
	margin     = 24.0
	lineH      = 17.0
	nodeGap    = 18.0
	nodeMinW   = 190.0
	nodeH      = 82.0
	feMinW     = 200.0
	feH        = 50.0
	feGap      = 24.0
	edgeSpace  = 120.0
	bridgeH    = 34.0
	lbPadding  = 16.0
	titleSpace = 34.0
	// boldFactor widens the sans estimate for bold text.
	boldFactor = 1.08
)

// frontendColors colour each frontend's box and arrows, in order: api,
// machine-config, ingress-http, ingress-https.
var frontendColors = [...]string{"#1f6feb", "#8250df", "#1a7f37", "#bf3989"}

func frontendColor(i int) string { return frontendColors[i%len(frontendColors)] }

// topoLayout is where each part of the topology picture goes.
type topoLayout struct {
	width, height  float64
	dnsY, dnsH     float64
	dnsW           float64
	lbY, lbH       float64
	feW, feX0      float64
	nodeW, nodeX0  float64
	nodeY, bridgeY float64
}

func (t *Topology) layout() topoLayout {
	var l topoLayout
	l.nodeW = nodeMinW
	for _, n := range t.Nodes {
		lines := n.label()
		// The first line is bold sans, with the state's dot after it.
		room := 24.0
		if n.State != "" {
			room = 44
		}
		l.nodeW = math.Max(l.nodeW, textWidth(lines[0], false)*boldFactor+room)
		for _, s := range lines[1:] {
			l.nodeW = math.Max(l.nodeW, textWidth(s, true)+28)
		}
	}
	l.feW = feMinW
	for _, f := range t.Frontends {
		l.feW = math.Max(l.feW, textWidth(f.listen()+" "+f.Check, true)+24)
	}
	for _, s := range t.dnsLines() {
		l.dnsW = math.Max(l.dnsW, textWidth(s, true)+28)
	}
	nodesW := float64(len(t.Nodes))*(l.nodeW+nodeGap) - nodeGap
	fesW := float64(len(t.Frontends))*(l.feW+feGap) - feGap + 2*lbPadding
	content := math.Max(math.Max(nodesW, fesW), math.Max(textWidth(t.bridgeLabel(), false)+24, textWidth(t.title(), false)*16/13))
	content = math.Max(content, math.Max(l.dnsW, textWidth(t.Note, false)))
	l.width = math.Ceil(content + 2*margin)
	l.nodeX0 = margin + (content-nodesW)/2
	l.feX0 = margin + (content-fesW)/2 + lbPadding
	l.dnsY = margin + titleSpace
	l.dnsH = 30 + float64(len(t.dnsLines()))*lineH
	l.lbY = l.dnsY + l.dnsH + 22
	l.lbH = 34 + feH + 14
	l.nodeY = l.lbY + l.lbH + edgeSpace
	l.bridgeY = l.nodeY + nodeH + 40
	l.height = math.Ceil(l.bridgeY + bridgeH + 64)
	return l
}

// SVG draws the topology: the DNS names, haproxy's four frontends with an
// arrow to each backend, the nodes, and the host bridge they hang from.
func (t *Topology) SVG() []byte {
	l := t.layout()
	s := newSVG(int(l.width), int(l.height), t.title())
	var colors []string
	for i := range t.Frontends {
		colors = append(colors, frontendColor(i))
	}
	s.arrowHeads(colors...)
	s.b.WriteString(`<text x="` + num(margin) + `" y="` + num(margin+16) + `" font-size="16" font-weight="bold" fill="#1f2328">` + esc(t.title()) + "</text>\n")
	t.drawDNS(s, l)
	centers := t.drawNodes(s, l)
	t.drawBalancer(s, l, centers)
	s.rect(margin, l.bridgeY, l.width-2*margin, bridgeH, "#f6f8fa", "#57606a", false)
	s.text(l.width/2, l.bridgeY+22, "middle", t.bridgeLabel(), false, true, "")
	s.text(margin, l.bridgeY+bridgeH+24, "start", t.Note, false, false, "#57606a")
	s.text(margin, l.bridgeY+bridgeH+44, "start",
		"Boxes: amber bootstrap, blue masters, green workers. Each arrow: a haproxy backend of the frontend of its colour.", false, false, "#57606a")
	return s.bytes()
}

func (t *Topology) drawDNS(s *svg, l topoLayout) {
	s.rect(margin, l.dnsY, l.dnsW, l.dnsH, "#f6f8fa", "#8c959f", false)
	gateway, _, _ := strings.Cut(t.Address, "/")
	s.text(margin+14, l.dnsY+20, "start", "DNS (the lab's dnsmasq on "+gateway+")", false, true, "")
	for i, line := range t.dnsLines() {
		s.text(margin+14, l.dnsY+38+float64(i)*lineH, "start", line, true, false, "")
	}
}

// drawNodes draws each node under the edges, on the bridge, and returns
// the x of each node's centre by name.
func (t *Topology) drawNodes(s *svg, l topoLayout) map[string]float64 {
	centers := map[string]float64{}
	for i, n := range t.Nodes {
		x := l.nodeX0 + float64(i)*(l.nodeW+nodeGap)
		cx := x + l.nodeW/2
		centers[n.Name] = cx
		s.line(cx, l.nodeY+nodeH, cx, l.bridgeY, "#57606a", 1.5, false)
		fill, stroke := n.tone().colors()
		s.rect(x, l.nodeY, l.nodeW, nodeH, fill, stroke, n.State != "" && n.State != "running")
		lines := n.label()
		s.text(x+12, l.nodeY+20, "start", lines[0], false, true, "")
		for j, line := range lines[1:] {
			s.text(x+12, l.nodeY+38+float64(j)*lineH, "start", line, true, false, "")
		}
		if n.State != "" {
			dot := "#cf222e"
			switch n.State {
			case "running":
				dot = "#2da44e"
			case "shut off":
				dot = "#8c959f"
			}
			s.circle(x+l.nodeW-14, l.nodeY+15, 5, dot, "#ffffff")
		}
	}
	return centers
}

// drawBalancer draws haproxy's box, its frontends and an arrow from each
// frontend to each of its backends.
func (t *Topology) drawBalancer(s *svg, l topoLayout, centers map[string]float64) {
	fesW := float64(len(t.Frontends))*(l.feW+feGap) - feGap
	s.rect(l.feX0-lbPadding, l.lbY, fesW+2*lbPadding, l.lbH, "#f6f8fa", "#57606a", false)
	s.text(l.feX0-lbPadding+14, l.lbY+21, "start", "haproxy on "+t.Balancer+" (the lab's load balancer)", false, true, "")
	n := float64(len(t.Frontends))
	for i, f := range t.Frontends {
		color := frontendColor(i)
		x := l.feX0 + float64(i)*(l.feW+feGap)
		y := l.lbY + 34
		s.rect(x, y, l.feW, feH, "#ffffff", color, false)
		s.text(x+l.feW/2, y+20, "middle", f.Name, false, true, color)
		s.text(x+l.feW/2, y+38, "middle", f.listen()+" "+f.Check, true, false, "")
		for j, be := range f.Backends {
			cx, ok := centers[be]
			if !ok {
				continue
			}
			start := x + l.feW/2 + (float64(j)-float64(len(f.Backends)-1)/2)*5
			end := cx + (float64(i)-(n-1)/2)*16
			s.curve(start, y+feH, end, l.nodeY-1, color)
		}
	}
}
