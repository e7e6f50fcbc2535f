package class

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/lab/spec"
)

// Kind heads every class spec file (apiVersion is spec.APIVersion).
const Kind = "Class"

// DefaultAddressPool is where lab networks are carved from when the class
// names no pool: private, beside the lab default 192.168.126.0/24 and
// libvirt's default 192.168.122.0/24 but overlapping neither; 128 /24s.
const DefaultAddressPool = "192.168.128.0/17"

// Spec is a class: one lab template, the learners, and where their lab
// networks come from.
type Spec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name names the class and prefixes its labs: <name>-<learner>.
	Name string `json:"name"`
	// Template is any lab spec, without the fields that must differ between
	// labs (name, network addresses, bridge, directories).
	Template map[string]any `json:"template"`
	// Learners is a count (learner-1, learner-2, ...) or a list of names.
	Learners Learners `json:"learners"`
	// AddressPool is a private IPv4 range cut into one /24 per lab.
	AddressPool string `json:"addressPool,omitempty"`
	// Overrides are merged over the template for one learner (mappings
	// merge key by key, lists and values replace).
	Overrides map[string]map[string]any `json:"overrides,omitempty"`
}

// Learners are the learner names, written as a count or a list.
type Learners struct {
	Count int
	Names []string
	// listed is set when the spec lists names (a count of 0 is then refused
	// differently from a missing field).
	listed bool
}

// UnmarshalJSON reads a count or a list of names.
func (l *Learners) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &l.Count); err == nil {
		return nil
	}
	if err := json.Unmarshal(b, &l.Names); err != nil {
		return errors.New("want a whole number of learners or a list of learner names")
	}
	l.listed = true
	return nil
}

// MarshalJSON writes what was read.
func (l Learners) MarshalJSON() ([]byte, error) {
	if l.listed {
		return json.Marshal(l.Names)
	}
	return json.Marshal(l.Count)
}

// List is every learner's name, in spec order (none for a count out of
// range, which validation names).
func (l Learners) List() []string {
	if l.listed {
		return l.Names
	}
	if l.Count < 0 || l.Count > maxLearners {
		return nil
	}
	out := make([]string, 0, l.Count)
	for i := 1; i <= l.Count; i++ {
		out = append(out, fmt.Sprintf("learner-%d", i))
	}
	return out
}

// Load reads a class spec file: a regular file of at most
// spec.MaxTextFileBytes.
func Load(path string) (*Spec, error) {
	data, err := spec.ReadRegular(path, spec.MaxTextFileBytes)
	if err != nil {
		var fe *spec.FileError
		if errors.As(err, &fe) && fe.NotExist {
			return nil, &spec.ValidationError{Source: path, Errs: []spec.FieldError{{Field: "(file)", Msg: "not found: write a class spec (see docs/class.md) or pass -f"}}}
		}
		if errors.As(err, &fe) {
			return nil, &spec.ValidationError{Source: path, Errs: []spec.FieldError{{Field: "(file)", Msg: fe.Msg}}}
		}
		return nil, fmt.Errorf("read class spec: %w", err)
	}
	return Parse(data, path)
}

// shape is the class spec as CheckYAML walks it: the template and every
// override are lab specs, so their text fields are checked too.
type shape struct {
	APIVersion  string               `json:"apiVersion"`
	Kind        string               `json:"kind"`
	Name        string               `json:"name"`
	Template    spec.Spec            `json:"template"`
	Learners    []string             `json:"learners"`
	AddressPool string               `json:"addressPool"`
	Overrides   map[string]spec.Spec `json:"overrides"`
}

// Parse decodes a class spec, rejecting unknown fields and what YAML reads
// otherwise than written (see spec.CheckYAML).
func Parse(data []byte, source string) (*Spec, error) {
	if errs := spec.CheckYAML(data, reflect.TypeOf(shape{}), "class spec", "see docs/class.md"); len(errs) > 0 {
		return nil, &spec.ValidationError{Source: source, Errs: errs}
	}
	var c Spec
	// Numbers stay as written: a float64 would turn 2^63-1 into another
	// number before the lab spec rules see it.
	useNumber := func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }
	if err := yaml.UnmarshalStrict(data, &c, useNumber); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
		msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
		field := "(file)"
		if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			field, msg = strings.Trim(name, `"`), "unknown field: a class has apiVersion, kind, name, template, learners, addressPool and overrides"
		} else if strings.Contains(msg, "learners") {
			field = "learners"
			msg = "want a whole number of learners or a list of learner names"
		} else {
			msg += ": fix the YAML syntax"
		}
		return nil, &spec.ValidationError{Source: source, Errs: []spec.FieldError{{Field: field, Msg: msg}}}
	}
	return &c, nil
}

// Lab is one learner's lab of a class.
type Lab struct {
	Learner string
	Spec    *spec.Spec
	// Built is set when the lab already exists as this class's lab (its
	// state names the class and holds the spec of a complete up).
	Built bool
}

// Plan is a class expanded into its labs, checked and ready to build.
type Plan struct {
	Class *Spec
	Labs  []Lab
}

// Lab returns the lab of learner name.
func (p *Plan) Lab(learner string) (*Lab, bool) {
	for i := range p.Labs {
		if p.Labs[i].Learner == learner {
			return &p.Labs[i], true
		}
	}
	return nil, false
}

// LabName is the lab of learner in class.
func LabName(class, learner string) string { return class + "-" + learner }

// Dir is the class's own directory under the bootlab home (handouts).
func Dir(home, class string) string { return filepath.Join(home, "classes", class) }

var labelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// maxLearners bounds a class: far more labs than any host holds.
const maxLearners = 1000

// maxLabName is spec.Validate's limit on lab names.
const maxLabName = 32

// perLab are the template fields that must differ from lab to lab: a
// template that sets one would give every lab the same value.
var perLab = []struct{ path, why string }{
	{"name", "each lab is named <class>-<learner>"},
	{"labDir", "each lab gets its own lab directory"},
	{"storage.poolDir", "each lab gets its own storage pool directory"},
	{"network.cidr", "addressPool gives each lab its own /24 (or set network.cidr per learner in overrides)"},
	{"network.bridge", "each lab's bridge is derived from its name"},
	{"network.gateway", "each lab's gateway is the first address of its own network"},
	{"network.apiAddress", "each lab's load balancer listens on its own network"},
	{"network.ingressAddress", "each lab's load balancer listens on its own network"},
}

// notOverridden are the fields an override must not set either: they
// must be unique per lab or they point at host resources, and bootlab
// derives a unique, safe value for each lab. No rule makes a learner's own
// value safe (two learners could name the same directory, or a bridge
// could be the host's uplink), so none is accepted.
var notOverridden = []struct{ path, why string }{
	{"name", "each lab is named <class>-<learner> (rename the learner instead); an override's name would be ignored"},
	{"labDir", "each lab gets its own directory under the bootlab home, and one named here could be shared with another lab or hold files bootlab did not make: leave it out"},
	{"storage.poolDir", "each lab gets its own storage pool directory, and one named here could be shared with another lab or hold files bootlab did not make: leave it out"},
	{"network.bridge", "each lab's bridge is derived from its name, and one named here could be another lab's or a host interface such as eth0: leave it out"},
}

// validateClass checks the class's own fields (not its labs).
func (c *Spec) validateClass(add func(field, format string, args ...any)) []string {
	if c.APIVersion != "" && c.APIVersion != spec.APIVersion {
		add("apiVersion", "%q is not supported: use %s", c.APIVersion, spec.APIVersion)
	}
	if c.Kind != "" && c.Kind != Kind {
		add("kind", "%q is not a class: use kind: %s (a lab spec is used with `bootlab lab`)", c.Kind, Kind)
	}
	switch {
	case c.Name == "":
		add("name", "missing: name the class (it prefixes every lab: <name>-<learner>)")
	case !labelRE.MatchString(c.Name):
		add("name", "%q is not a DNS label: use lowercase letters, digits and '-', starting and ending with a letter or digit", c.Name)
	}
	if n := max(c.Learners.Count, len(c.Learners.Names)); n > maxLearners {
		add("learners", "%d: a class has at most %d learners (one /24 and one load balancer each on one host)", n, maxLearners)
		return nil
	}
	learners := c.Learners.List()
	switch {
	case c.Learners.listed && len(learners) == 0:
		add("learners", "the list is empty: name at least one learner")
	case !c.Learners.listed && c.Learners.Count == 0:
		add("learners", "missing: give a count (learners: 3) or a list of names")
	case !c.Learners.listed && c.Learners.Count < 0:
		add("learners", "%d: give a count of at least 1 (learners: 3) or a list of names", c.Learners.Count)
	}
	seen := map[string]int{}
	var ok []string
	for i, l := range learners {
		f := fmt.Sprintf("learners[%d]", i)
		switch {
		case !labelRE.MatchString(l) || len(l) > 63:
			add(f, "%q is not a DNS label: use lowercase letters, digits and '-', starting and ending with a letter or digit (it names the lab %s-<learner> and its handout)", l, c.Name)
			continue
		case seen[l] > 0:
			add(f, "%q is already learners[%d]: every learner needs a name of their own", l, seen[l]-1)
			continue
		}
		seen[l] = i + 1
		if n := LabName(c.Name, l); c.Name != "" && len(n) > maxLabName {
			add(f, "lab name %q is %d characters, at most %d are allowed: shorten the class name or the learner name", n, len(n), maxLabName)
			continue
		}
		ok = append(ok, l)
	}
	keys := make([]string, 0, len(c.Overrides))
	for k := range c.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if seen[k] == 0 {
			add("overrides."+k, "%q is not a learner of this class (learners: %s): fix the name or add the learner", k, strings.Join(learners, ", "))
		}
		for _, p := range notOverridden {
			if _, set := lookup(map[string]any(c.Overrides[k]), p.path); set {
				add("overrides."+k+"."+p.path, "must not be set per learner: %s", p.why)
			}
		}
	}
	if c.Template == nil {
		add("template", "missing: give the lab spec every learner gets (at least `template: {}` for the defaults)")
	}
	for _, p := range perLab {
		if _, set := lookup(c.Template, p.path); set {
			add("template."+p.path, "must not be set in a class template: %s", p.why)
		}
	}
	if nodes, ok := lookup(c.Template, "nodes"); ok {
		if list, ok := nodes.([]any); ok {
			for i, n := range list {
				for _, key := range []string{"ip", "mac"} {
					if _, set := lookup(n, key); set {
						add(fmt.Sprintf("template.nodes[%d].%s", i, key), "must not be set in a class template: every lab's nodes get addresses of their own")
					}
				}
			}
		}
	}
	return ok
}

// Check runs the rules that need no host: the class's own fields and each
// learner's lab spec as written (template and override). Expand runs them
// too; a command runs Check first so a bad class file is refused before
// libvirt is asked anything.
func (c *Spec) Check(source string) error {
	var errs []spec.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, spec.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for _, learner := range c.validateClass(add) {
		_, ferrs := c.labSpec(learner)
		errs = append(errs, ferrs...)
	}
	if len(errs) > 0 {
		return &spec.ValidationError{Source: source, Errs: errs}
	}
	return nil
}

// lookup follows a dotted path of mapping keys.
func lookup(doc any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[k]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// merge returns base with over merged in: mappings key by key, anything
// else replaced. Neither argument is changed.
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, bok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			out[k] = merge(bm, om)
			continue
		}
		out[k] = v
	}
	return out
}

// labSpec is learner's lab spec before addresses: the template with the
// learner's overrides, named <class>-<learner>. Field errors name where
// the problem was written (template... or overrides.<learner>...).
func (c *Spec) labSpec(learner string) (*spec.Spec, []spec.FieldError) {
	var errs []spec.FieldError
	parse := func(doc map[string]any, prefix string) *spec.Spec {
		data, err := json.Marshal(doc)
		if err != nil {
			errs = append(errs, spec.FieldError{Field: prefix, Msg: err.Error()})
			return nil
		}
		s, err := spec.Parse(data, prefix)
		var ve *spec.ValidationError
		if errors.As(err, &ve) {
			for _, fe := range ve.Errs {
				fe.Field = prefix + "." + fe.Field
				errs = append(errs, fe)
			}
			return nil
		}
		if err != nil {
			errs = append(errs, spec.FieldError{Field: prefix, Msg: err.Error()})
			return nil
		}
		return s
	}
	if parse(c.Template, "template") == nil {
		return nil, errs
	}
	over, has := c.Overrides[learner]
	if has && parse(over, "overrides."+learner) == nil {
		return nil, errs
	}
	doc := merge(c.Template, over)
	doc["name"] = LabName(c.Name, learner)
	s := parse(doc, "lab "+LabName(c.Name, learner))
	return s, errs
}

// Marshal renders every lab's effective spec as YAML documents, one per
// learner in class order, each headed by its learner.
func (p *Plan) Marshal() ([]byte, error) {
	var b strings.Builder
	for i, l := range p.Labs {
		if i > 0 {
			b.WriteString("---\n")
		}
		data, err := l.Spec.Marshal()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "# class %s, learner %s\n", p.Class.Name, l.Learner)
		b.Write(data)
	}
	return []byte(b.String()), nil
}
