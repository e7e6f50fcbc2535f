package class

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"
)

// The rules of a class file that need no host: its own fields, what the
// template and the overrides may set. Expand adds the checks against the
// host and between the labs.

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
	c.validateOverrides(learners, seen, add)
	c.validateHosts(add)
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

// validateOverrides refuses an override of no learner and the fields no
// override may set: an override is never silently ignored.
func (c *Spec) validateOverrides(learners []string, seen map[string]int, add func(field, format string, args ...any)) {
	for _, k := range sortedKeys(c.Overrides) {
		if seen[k] == 0 {
			add("overrides."+k, "%q is not a learner of this class (learners: %s): fix the name or add the learner", k, strings.Join(learners, ", "))
		}
		for _, p := range notOverridden {
			if _, set := lookup(map[string]any(c.Overrides[k]), p.path); set {
				add("overrides."+k+"."+p.path, "must not be set per learner: %s", p.why)
			}
		}
	}
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

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
