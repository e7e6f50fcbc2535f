package diagram

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parses(t *testing.T, data []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "not well-formed XML:\n%s", data)
	}
}

// Text with XML's special characters stays text in the SVG, and a
// quote does not end a Mermaid or DOT label.
func TestTextIsEscaped(t *testing.T) {
	t.Parallel()
	topo := &Topology{Lab: `a<b>&"c"`, Summary: "x", Address: "10.0.0.1/24",
		Nodes:     []Node{{Name: `n"1`, Role: "master", FQDN: "n1.c.d"}},
		Frontends: []Frontend{{Name: "api", Port: 6443, Backends: []string{`n"1`}}}}
	svg := topo.SVG()
	parses(t, svg)
	assert.Contains(t, string(svg), "a&lt;b&gt;&amp;&quot;c&quot;")
	assert.Contains(t, string(topo.Mermaid()), `n#quot;1 (master)`)
	assert.Contains(t, string(topo.DOT()), `n\"1 (master)`)
	assert.Contains(t, string(topo.Mermaid()), "fe_api --> n_n_1", "identifiers keep only letters and digits")
	_, err := topo.Render("png")
	assert.EqualError(t, err, `unknown picture format "png": use svg, dot or mermaid`)
}

// Equal neighbouring cells of a lane are one bar; Mermaid has one box per
// run of equal rows.
func TestTimelineMergesEqualCells(t *testing.T) {
	t.Parallel()
	tl := &Timeline{Title: "t", Heading: "step", Lanes: []string{"A", "B"}, Rows: []TimelineRow{
		{Label: "1", Cells: []Cell{{Text: "x"}, {Text: "p"}}},
		{Label: "2", Cells: []Cell{{Text: "x"}, {Text: "p"}}},
		{Label: "3", Cells: []Cell{{Text: "x"}, {Text: "q", Tone: ToneMasters}}},
		{Label: "4", Cells: []Cell{{Text: "y"}, {Text: "q", Tone: ToneMasters}}},
	}}
	assert.Equal(t, [][3]int{{0, 2, 0}, {3, 3, 3}}, tl.bars(0))
	assert.Equal(t, [][3]int{{0, 1, 0}, {2, 3, 2}}, tl.bars(1))
	svg := tl.SVG()
	parses(t, svg)
	assert.Equal(t, 1, strings.Count(string(svg), ">x</text>"), "one bar for rows 1-3 of lane A")
	assert.Equal(t, "flowchart TD\n"+
		"  t0[\"<b>1 to 2</b><br/>A: x<br/>B: p\"]\n"+
		"  t1[\"<b>3</b><br/>A: x<br/>B: q\"]\n"+
		"  t2[\"<b>4</b><br/>A: y<br/>B: q\"]\n"+
		"  t0 --> t1 --> t2\n", string(tl.Mermaid()))
}

func TestMembership(t *testing.T) {
	t.Parallel()
	m := &Membership{Title: "m", Steps: []MembershipStep{
		{Label: "after 1", Members: []Member{{Name: "a", Tone: ToneBootstrap}}},
		{Label: "after 2", How: "b joins", Members: []Member{{Name: "a", Tone: ToneBootstrap}, {Name: "b", Tone: ToneMasters}}},
	}}
	svg := m.SVG()
	parses(t, svg)
	assert.Contains(t, string(svg), ">2 members</text>")
	assert.Contains(t, string(svg), ">1 member</text>")
	mm := string(m.Mermaid())
	assert.Contains(t, mm, "subgraph s1[\"after 2: 2 members\"]")
	assert.Contains(t, mm, "s0 -->|\"b joins\"| s1")
}

func TestWrap(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"one two", "three"}, wrap("one two three", 8))
	assert.Equal(t, []string{"averyverylongword"}, wrap("averyverylongword", 4))
	assert.Empty(t, wrap("", 4))
}

// A package sits one row below its lowest importer, so every arrow points
// down; a package nobody imports is on top; an import another path
// implies (top -> leaf, through mid) is not drawn.
func TestModulesLayersByImports(t *testing.T) {
	t.Parallel()
	m := &Modules{Title: "m", Packages: []Package{
		{Name: "leaf", Plays: "shared"}, {Name: "top", Plays: "the main"}, {Name: "mid", Files: []string{"mid.go: the work"}, Tone: ToneMasters},
	}, Imports: []Import{{"top", "mid"}, {"top", "leaf"}, {"mid", "leaf"}}}
	var rows [][]string
	for _, l := range m.layers() {
		var names []string
		for _, p := range l {
			names = append(names, p.Name)
		}
		rows = append(rows, names)
	}
	assert.Equal(t, [][]string{{"top"}, {"mid"}, {"leaf"}}, rows)
	svg := m.SVG()
	parses(t, svg)
	assert.Contains(t, string(svg), ">mid.go: the work</text>")
	assert.Equal(t, "flowchart TD\n"+
		"  p_leaf[\"leaf<br/>shared\"]\n  p_top[\"top<br/>the main\"]\n  p_mid[\"mid\"]\n"+
		"  p_top --> p_mid\n  p_mid --> p_leaf\n", string(m.Mermaid()))
}

// A decision tree: one box per question with its checks, a "no" arrow to
// where to look, "yes" down to the next; a failed step's "no" is red.
func TestDecision(t *testing.T) {
	t.Parallel()
	d := &Decision{Title: "tree", End: "done", Note: "n", Steps: []DecisionStep{
		{Question: "etcd healthy?", Otherwise: []string{"check etcd"}, Verdict: VerdictPassed,
			Checks: []DecisionCheck{{Name: "etcd.healthy", Verdict: VerdictPassed}}},
		{Question: `API "accessible"?`, Otherwise: []string{"check the MCS", "verify DNS"}, Verdict: VerdictFailed,
			Checks: []DecisionCheck{{Name: "api.readyz", Verdict: VerdictFailed}, {Name: "api.lb", Verdict: VerdictUnknown}}},
	}}
	svg := string(d.SVG())
	parses(t, []byte(svg))
	for _, want := range []string{">✓ etcd.healthy</text>", ">✗ api.readyz</text>", ">? api.lb</text>", "API &quot;accessible&quot;?", ">check the MCS</text>", ">done</text>", `stroke="#cf222e" stroke-width="1.6" marker-end="url(#arrow-cf222e)"`} {
		assert.Contains(t, svg, want)
	}
	assert.Equal(t, 2, strings.Count(svg, ">no</text>"))
	assert.Equal(t, 2, strings.Count(svg, ">yes</text>"))
	mm := string(d.Mermaid())
	for _, want := range []string{"flowchart TD", `Q1["<b>API #quot;accessible#quot;?</b><br/>✗ api.readyz<br/>? api.lb"]`, "Q0 -->|yes| Q1", "Q1 -->|yes| END", "Q1 -->|no| E1", `E1["check the MCS<br/>verify DNS"]`, "style Q1 fill:#ffe5e3,stroke:#cf222e"} {
		assert.Contains(t, mm, want)
	}
	bare := &Decision{Title: "t", End: "e", Steps: []DecisionStep{{Question: "q?", Checks: []DecisionCheck{{Name: "c"}}}}}
	assert.Contains(t, string(bare.SVG()), ">• c</text>", "the bare tree marks no verdict")
}
