package stages

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// NodeBootkube is where the installer writes the rendered bootkube.sh on the
// bootstrap node, beside the helpers it sources.
const NodeBootkube = "/usr/local/bin/bootkube.sh"

// NodeScriptFiles are bootkube.sh and the helpers the installer's
// bootkube.sh sources: what ReadNodeScript reads on a bootstrap node, for a
// caller that reads them all at once (node.Prefetch). ReadNodeScript still
// follows the script's own source lines.
func NodeScriptFiles() []string {
	return []string{NodeBootkube, NodeReleaseImage, "/usr/local/bin/bootstrap-service-record.sh", "/usr/local/bin/bootstrap-verify-api-server-urls.sh"}
}

// ScriptStep is one named step of a node's bootkube.sh, in script order.
type ScriptStep struct {
	Name string `json:"name"`
	// Marker is the file in /opt/openshift whose presence skips the step and
	// that the step writes (etcd-bootstrap.done); empty when none.
	Marker string `json:"marker,omitempty"`
	// Guard is a file that skips the step without being written by it
	// (wait-for-etcd is skipped once a single node wrote stop-etcd.done).
	Guard string `json:"guard,omitempty"`
	// Line is the line of bootkube.sh where the step begins: its guard, its
	// record_service_stage_start call or the call of the helper holding it.
	Line int `json:"line"`
	// File is the sourced helper holding the step's code, when not bootkube.sh
	// (konnectivity.sh, bootstrap-verify-api-server-urls.sh).
	File string `json:"file,omitempty"`
	// Stage is the number of the stage the step belongs to (set by MapScript).
	Stage int `json:"-"`
	// New marks a step bootlab's catalog does not know (a newer release).
	New bool `json:"new,omitempty"`
	// SingleNode marks a step that runs only for bootstrap-in-place.
	SingleNode bool `json:"singleNode,omitempty"`
}

// BootkubeScript is a parsed rendered bootkube.sh.
type BootkubeScript struct {
	// Path names the script in messages (the node path or a local file).
	Path string
	Data []byte
	// Sources are the /usr/local/bin helpers the script sources, in order.
	Sources []string
	Steps   []ScriptStep
}

// singleNodeSteps run only when the bootstrap node installs itself
// (bootstrap-in-place): bootkube.sh's own and bootstrap-in-place.sh's.
var singleNodeSteps = map[string]bool{
	"cmdbootline-nto-bootstrap": true,
	"stop-etcd":                 true,
	"master-ignition":           true,
}

// helperCallSteps are the helpers of bootstrap-verify-api-server-urls.sh,
// which record a stage named after their first argument.
var helperCallSteps = map[string]map[string]string{
	"resolve_url": {"API_URL": "resolve-api-url", "API_INT_URL": "resolve-api-int-url"},
	"check_url":   {"API_URL": "check-api-url", "API_INT_URL": "check-api-int-url"},
}

var (
	guardRE  = regexp.MustCompile(`\[\[? +! +-f +"?(?:/opt/openshift/)?([A-Za-z0-9._-]+)"? +\]\]?`)
	recordRE = regexp.MustCompile(`\brecord_service_stage_start +"?([A-Za-z0-9._-]+)"?`)
	touchRE  = regexp.MustCompile(`\btouch +"?(?:/opt/openshift/)?([A-Za-z0-9._-]+)"?`)
	sourceRE = regexp.MustCompile(`^\s*(?:\.|source)\s+"?(/usr/local/bin/[A-Za-z0-9._-]+)"?`)
	funcRE   = regexp.MustCompile(`^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{?\s*$`)
	wordRE   = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	snoIfRE  = regexp.MustCompile(`BOOTSTRAP_INPLACE\}?"?\s*==?\s*"?true`)
)

// ParseBootkube reads a rendered bootkube.sh into its named steps, in the
// order the script runs them. Steps are found where bootkube delimits them:
// `if [ ! -f NAME.done ]` guards and `record_service_stage_start "NAME"`
// calls, also inside functions of the script and of the helpers it sources
// (helpers maps a sourced path such as /usr/local/bin/konnectivity.sh to
// its content; a missing helper only hides the steps it holds).
func ParseBootkube(name string, data []byte, helpers map[string][]byte) (*BootkubeScript, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.Contains(text, "record_service_stage_start") && !guardRE.MatchString(text) {
		return nil, fmt.Errorf("%s: no bootkube steps found (no record_service_stage_start calls or `if [ ! -f NAME.done ]` guards): is it bootkube.sh?", name)
	}
	p := &parser{funcs: map[string]*funcDef{}}
	for hp, hdata := range helpers {
		p.collectFuncs(strings.Split(string(hdata), "\n"), path.Base(hp))
	}
	lines := strings.Split(text, "\n")
	p.collectFuncs(lines, "")
	b := &BootkubeScript{Path: name, Data: data}
	for _, l := range lines {
		if m := sourceRE.FindStringSubmatch(l); m != nil {
			b.Sources = append(b.Sources, m[1])
		}
	}
	b.Steps = p.scan(lines, "", p.defRanges(""), 0)
	if len(b.Steps) == 0 {
		return nil, fmt.Errorf("%s: no bootkube steps found: is it bootkube.sh?", name)
	}
	return b, nil
}

type funcDef struct {
	file       string
	start, end int // line indexes of the definition and its closing brace
	lines      []string
	steps      []ScriptStep
	scanned    bool
	scanning   bool
}

type parser struct {
	funcs map[string]*funcDef
}

// collectFuncs finds function definitions by their braces.
func (p *parser) collectFuncs(lines []string, file string) {
	for i := 0; i < len(lines); i++ {
		m := funcRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		j, depth, opened := i, 0, false
		for ; j < len(lines); j++ {
			o, c := strings.Count(lines[j], "{"), strings.Count(lines[j], "}")
			depth += o - c
			opened = opened || o > 0
			if opened && depth <= 0 {
				break
			}
		}
		if j >= len(lines) {
			j = len(lines) - 1
		}
		// A function of the script itself wins over a helper's of the same name.
		if _, ok := p.funcs[m[1]]; !ok || file == "" {
			p.funcs[m[1]] = &funcDef{file: file, start: i, end: j, lines: lines}
		}
		i = j
	}
}

// defRanges are the definitions in one file, which scan skips.
func (p *parser) defRanges(file string) [][2]int {
	var out [][2]int
	for _, f := range p.funcs {
		if f.file == file {
			out = append(out, [2]int{f.start, f.end})
		}
	}
	return out
}

func (p *parser) stepsOf(name string) []ScriptStep {
	f := p.funcs[name]
	if f == nil || f.scanning {
		return nil
	}
	if !f.scanned {
		f.scanning = true
		// A definition on the file's last line (or never closed) has no
		// body lines: end is then not past start.
		var body []string
		if f.end > f.start {
			body = f.lines[f.start+1 : f.end]
		}
		f.steps = p.scan(body, f.file, nil, 0)
		f.scanning, f.scanned = false, true
	}
	return f.steps
}

// level is one open `if` block.
type level struct {
	sno   bool
	guard string // the file of a `[ ! -f FILE ]` test, or ""
	line  int
	owner int // index of the first step found inside the guard, or -1
	touch bool
}

// scan walks lines (of the script, or one function body) and returns the
// steps in the order they run. Line numbers are offset+index+1.
func (p *parser) scan(lines []string, file string, skip [][2]int, offset int) []ScriptStep {
	sc := &scanner{p: p, file: file, offset: offset}
	for i := 0; i < len(lines); i++ {
		if inRanges(skip, i) {
			continue
		}
		sc.line(lines, i)
	}
	for len(sc.stack) > 0 {
		sc.closeLevel()
	}
	return sc.steps
}

// scanner is one scan: the steps found so far and the if-blocks open at
// the current line.
type scanner struct {
	p      *parser
	file   string
	offset int
	steps  []ScriptStep
	stack  []*level
}

// inSNO says whether the current line is inside a single-node-only block.
func (sc *scanner) inSNO() bool {
	for _, l := range sc.stack {
		if l.sno {
			return true
		}
	}
	return false
}

// add records step st found at line.
func (sc *scanner) add(st ScriptStep, line int) {
	if st.Line == 0 || sc.file == "" {
		st.Line = line
	}
	if sc.file != "" && st.File == "" {
		st.File = sc.file
	}
	st.SingleNode = st.SingleNode || sc.inSNO() || singleNodeSteps[st.Name]
	// The innermost guard without a step yet owns this one.
	for i := len(sc.stack) - 1; i >= 0; i-- {
		if sc.stack[i].guard != "" {
			if sc.stack[i].owner < 0 {
				sc.stack[i].owner = len(sc.steps)
			}
			break
		}
	}
	sc.steps = append(sc.steps, st)
}

// closeLevel ends the innermost if-block, giving its guard's marker to the
// step it owns (or naming a step by the marker).
func (sc *scanner) closeLevel() {
	if len(sc.stack) == 0 {
		return
	}
	l := sc.stack[len(sc.stack)-1]
	sc.stack = sc.stack[:len(sc.stack)-1]
	if l.guard == "" {
		return
	}
	if l.owner < 0 {
		// A guarded block with no recorded step: name it by its marker,
		// or give the marker to the step of that name found earlier
		// (its record call sat in a function defined before the guard).
		name := strings.TrimSuffix(l.guard, ".done")
		for i := range sc.steps {
			if sc.steps[i].Name == name && sc.steps[i].Marker == "" {
				sc.steps[i].Marker = l.guard
				return
			}
		}
		if !l.touch {
			return
		}
		l.owner = len(sc.steps)
		sc.steps = append(sc.steps, ScriptStep{Name: name, Line: sc.offset + l.line + 1, SingleNode: sc.inSNO() || l.sno})
	}
	st := &sc.steps[l.owner]
	if gl := sc.offset + l.line + 1; sc.file == "" && gl < st.Line {
		st.Line = gl
	}
	if l.touch || strings.TrimSuffix(l.guard, ".done") == st.Name {
		if st.Marker == "" {
			st.Marker = l.guard
		}
	} else if st.Guard == "" {
		st.Guard = l.guard
	}
}

// line reads lines[i]: the blocks it opens or closes, the markers it
// touches and the steps it records or calls.
func (sc *scanner) line(lines []string, i int) {
	line := strings.TrimSpace(lines[i])
	if line == "" || strings.HasPrefix(line, "#") {
		return
	}
	lineNo := sc.offset + i + 1
	first := strings.Fields(line)[0]
	if first == "if" {
		l := &level{owner: -1, line: i, sno: snoIfRE.MatchString(line)}
		if m := guardRE.FindStringSubmatch(line); m != nil {
			l.guard = m[1]
		}
		sc.stack = append(sc.stack, l)
	}
	if first == "else" || first == "elif" {
		if n := len(sc.stack); n > 0 {
			sc.stack[n-1].sno = false
		}
	}
	if m := touchRE.FindStringSubmatch(line); m != nil {
		for _, l := range sc.stack {
			if l.guard == m[1] {
				l.touch = true
			}
		}
	}
	if m := recordRE.FindStringSubmatch(line); m != nil {
		sc.add(ScriptStep{Name: m[1]}, lineNo)
	} else if !strings.HasPrefix(first, "echo") {
		words := wordRE.FindAllString(line, -1)
		for wi, w := range words {
			if names, ok := helperCallSteps[w]; ok && wi+1 < len(words) {
				if n, ok := names[words[wi+1]]; ok {
					sc.add(ScriptStep{Name: n}, lineNo)
				}
				continue
			}
			if _, ok := sc.p.funcs[w]; ok && !funcRE.MatchString(lines[i]) {
				for _, st := range sc.p.stepsOf(w) {
					sc.add(st, lineNo)
				}
			}
		}
	}
	if first == "fi" || strings.HasSuffix(line, "; fi") || strings.HasSuffix(line, ";fi") {
		sc.closeLevel()
	}
}

func inRanges(rs [][2]int, i int) bool {
	for _, r := range rs {
		if i >= r[0] && i <= r[1] {
			return true
		}
	}
	return false
}

var (
	blockEndRE   = regexp.MustCompile(`^(fi|\}|done|esac)\b`)
	releaseVarRE = regexp.MustCompile(`\$\(image_for |^(KUBERNETES_)?VERSION=`)
	// setupRE is a line that prepares the next block: an assignment or an echo.
	setupRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=|^echo `)
)
