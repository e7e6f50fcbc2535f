package class

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/userfile"
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
	// Hosts are the libvirt hosts the labs are placed on; none is the
	// host the template names (this machine by default), as for one lab.
	Hosts []HostSpec `json:"hosts,omitempty"`
	// Placement is how labs are placed over Hosts: spread (default) or pack.
	Placement Placement `json:"placement,omitempty"`
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
// userfile.MaxTextBytes.
func Load(path string) (*Spec, error) {
	data, err := userfile.Read(path, userfile.MaxTextBytes)
	if err != nil {
		var fe *userfile.Error
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
	Hosts       []HostSpec           `json:"hosts"`
	Placement   string               `json:"placement"`
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
			key := strings.Trim(name, `"`)
			fe := spec.UnknownField(data, key, "class spec", "unknown field: a class has apiVersion, kind, name, template, learners, addressPool, hosts, placement and overrides")
			field, msg = fe.Field, fe.Msg
			if i, ok := hostWithKey(data, key); ok && fe.Field == key {
				field, msg = fmt.Sprintf("hosts[%d].%s", i, key), "unknown field: a host has name, uri, hostDir and maxLabs"
			}
		} else if strings.Contains(msg, "learners") {
			field = "learners"
			msg = "want a whole number of learners or a list of learner names"
		} else {
			msg = spec.Unquoted(msg) + ": fix the YAML syntax"
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
	// Host is the name of the host the lab is placed on ("" for a class
	// without hosts).
	Host string
}

// Plan is a class expanded into its labs, checked and ready to build.
type Plan struct {
	Class *Spec
	Labs  []Lab
	// Hosts are the class's hosts with their facts and the learners
	// placed on each (none for a class without hosts), in spec order.
	Hosts []PlanHost
	// Placement is the mode the labs were placed by.
	Placement Placement
}

// PlanHost is one host of a plan: its entry, what was measured of it, and
// the learners whose labs are on it.
type PlanHost struct {
	HostSpec
	Capacity *Capacity
	Err      error
	Labs     []string
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
// learner in class order, each headed by its learner (and host); a class
// with hosts starts with its placement table, as comments.
func (p *Plan) Marshal() ([]byte, error) {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(p.PlacementTable(), "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "# %s\n", strings.TrimRight(line, " "))
		}
	}
	for i, l := range p.Labs {
		if i > 0 {
			b.WriteString("---\n")
		}
		data, err := l.Spec.Marshal()
		if err != nil {
			return nil, err
		}
		on := ""
		if l.Host != "" {
			on = ", host " + l.Host
		}
		fmt.Fprintf(&b, "# class %s, learner %s%s\n", p.Class.Name, l.Learner, on)
		b.Write(data)
	}
	return []byte(b.String()), nil
}
