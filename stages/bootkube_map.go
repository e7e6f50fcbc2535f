package stages

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/bootlab/bootlab/internal/node"
)

// StageBlock is one stage of a node's script: the steps of bootkube.sh that
// belong to it, in script order.
type StageBlock struct {
	Stage *Stage       `json:"-"`
	Steps []ScriptStep `json:"steps"`
}

// MapScript assigns every step of the script to a stage by its bootkube
// name. A step the catalog does not know joins the stage of the known step
// before it (stage 01 when none comes before) and is marked New, so the
// stage numbers a learner knows still hold on newer releases. It returns
// one block per catalog stage, in catalog order, and sets each step's Stage.
func (c Catalog) MapScript(b *BootkubeScript) []StageBlock {
	blocks := make([]StageBlock, len(c))
	idx := map[int]int{}
	for i, s := range c {
		blocks[i].Stage = s
		idx[s.Number] = i
	}
	cur := c[0].Number
	for i := range b.Steps {
		st := &b.Steps[i]
		if s := c.StageOfStep(st.Name); s != nil {
			cur = s.Number
			st.New = false
		} else {
			st.New = !st.SingleNode
		}
		st.Stage = cur
		blocks[idx[cur]].Steps = append(blocks[idx[cur]].Steps, *st)
	}
	return blocks
}

// StageOfStep is the stage that holds the bootkube step name, or nil.
func (c Catalog) StageOfStep(name string) *Stage {
	for _, s := range c {
		for _, st := range s.Steps {
			if st.Name == name {
				return s
			}
		}
	}
	return nil
}

// StepNames are the names of the steps, in order.
func StepNames(steps []ScriptStep) []string {
	out := make([]string, 0, len(steps))
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

// CatalogSteps are the named steps the catalog models for release v, in
// order: what bootlab's annotated scripts run.
func (c Catalog) CatalogSteps(v Version) []Step {
	var out []Step
	for _, s := range c {
		for _, st := range s.Steps {
			if strings.HasPrefix(st.Name, "(") || (!st.Since.IsZero() && v.Less(st.Since)) {
				continue
			}
			out = append(out, st)
		}
	}
	return out
}

// CompareSteps says how the script's steps (single-node ones left out)
// differ from the catalog's for release v, or "" when they agree on every
// name, marker and their order.
func (c Catalog) CompareSteps(b *BootkubeScript, v Version) string {
	var got []string
	for _, st := range b.Steps {
		if !st.SingleNode {
			got = append(got, st.Name+"["+st.Marker+"]")
		}
	}
	var want []string
	for _, st := range c.CatalogSteps(v) {
		m := st.Marker
		if m == BootkubeDone {
			continue
		}
		if m == "" || strings.HasPrefix(m, ".") {
			m = ""
		}
		want = append(want, st.Name+"["+m+"]")
	}
	if strings.Join(got, " ") == strings.Join(want, " ") {
		return ""
	}
	var extra, missing []string
	has := func(list []string, x string) bool {
		for _, y := range list {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, g := range got {
		if !has(want, g) {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !has(got, w) {
			missing = append(missing, w)
		}
	}
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, "only in "+path.Base(b.Path)+": "+strings.Join(extra, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("only in bootlab's %s catalog: %s", v, strings.Join(missing, ", ")))
	}
	if len(parts) == 0 {
		parts = append(parts, "the same steps in another order")
	}
	return strings.Join(parts, "; ")
}

// BlockLines returns the lines of the script that make up stage s: from
// the start of its first step (with the comments and setup right above it)
// to the line before the next stage's first step. first is the 1-based
// number of the first line. Stage 02 (release-image) has no named step:
// its lines are the image_for calls and the VERSION assignments. It
// returns no lines when the script has no step of s.
func (n *NodeScript) BlockLines(s *Stage) (first int, lines []string) {
	all := strings.Split(strings.TrimRight(string(n.Script.Data), "\n"), "\n")
	if len(n.Block(s)) == 0 {
		if s.Slug != "release-image" {
			return 0, nil
		}
		for i, l := range all {
			if releaseVarRE.MatchString(strings.TrimSpace(l)) {
				if first == 0 {
					first = i + 1
				}
				lines = append(lines, l)
			}
		}
		return first, lines
	}
	start := n.blockStart(s, all)
	end := len(all)
	for _, b := range n.Blocks {
		if b.Stage.Number <= s.Number || len(b.Steps) == 0 {
			continue
		}
		if next := n.blockStart(b.Stage, all); next > start && next-1 < end {
			end = next - 1
		}
	}
	// Leave the next block's own comments and setup to it.
	for end > start {
		l := strings.TrimSpace(all[end-1])
		if l != "" && !strings.HasPrefix(l, "#") && !setupRE.MatchString(l) {
			break
		}
		end--
	}
	return start, all[start-1 : end]
}

// blockStart is the first line of stage s's block: its first step, with
// the comments and setup right above it.
func (n *NodeScript) blockStart(s *Stage, all []string) int {
	start := len(all) + 1
	for _, st := range n.Block(s) {
		start = min(start, st.Line)
	}
	for start > 1 {
		prev := strings.TrimSpace(all[start-2])
		if blockEndRE.MatchString(prev) || releaseVarRE.MatchString(prev) || n.stepAt(start-1) {
			break
		}
		start--
	}
	for start < len(all) && strings.TrimSpace(all[start-1]) == "" {
		start++
	}
	return start
}

// stepAt reports whether a step begins on line (1-based).
func (n *NodeScript) stepAt(line int) bool {
	for _, st := range n.Script.Steps {
		if st.Line == line {
			return true
		}
	}
	return false
}

// BootkubeActive reports whether bootkube.service runs on the node: stages
// run beside it would race it over the same files.
func BootkubeActive(ctx context.Context, n node.Node) (bool, error) {
	code, err := n.Run(ctx, "systemctl is-active --quiet bootkube.service", nil, nil, nil)
	if err != nil {
		return false, err
	}
	return code == 0, nil
}
