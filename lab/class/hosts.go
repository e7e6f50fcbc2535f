package class

import (
	"fmt"
	"path"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/lab/spec"
)

// HostSpec is one libvirt host a class's labs may be placed on: an entry
// of the class file's hosts. A class without hosts lives on the host its
// template names (this machine by default), as a lab does.
type HostSpec struct {
	// Name names the host in class config, status, handouts and the
	// dashboard (a DNS label).
	Name string `json:"name"`
	// URI is the host's libvirt URI: qemu:///system for this machine,
	// qemu+ssh://user@host/system for another (see README, Remote
	// hypervisor).
	URI string `json:"uri"`
	// HostDir is bootlab's directory on that machine: each lab placed
	// there keeps its console logs and load balancer in
	// <hostDir>/labs/<lab> (its libvirt.hostDir). Default: a lab's
	// default (/var/lib/bootlab/labs/<lab> on a remote host, the lab
	// directory on this machine).
	HostDir string `json:"hostDir,omitempty"`
	// MaxLabs caps the labs of this class on the host; absent, only
	// memory and disk do. 0 places no new lab there (labs built there
	// stay).
	MaxLabs *int `json:"maxLabs,omitempty"`
}

// LabHostDir is the libvirt.hostDir of lab on h ("" for the lab's default).
func (h HostSpec) LabHostDir(lab string) string {
	if h.HostDir == "" {
		return ""
	}
	return path.Join(filepath.Clean(h.HostDir), "labs", lab)
}

// Placement says how labs are spread over the hosts.
type Placement string

const (
	// PlacementSpread (the default) puts each lab on the host with room
	// for the most more labs like it: the class spreads by capacity.
	PlacementSpread Placement = "spread"
	// PlacementPack fills the hosts in the order listed: a lab goes to
	// the first host with room for it.
	PlacementPack Placement = "pack"
)

// maxHosts bounds hosts: more than any classroom, and each host is one
// SSH connection (or more) from the trainer's machine.
const maxHosts = 64

// hostFields are the lab spec fields the class's hosts decide: a template
// or an override setting one would put labs elsewhere than placed.
var hostFields = []string{"libvirt.uri", "libvirt.hostDir"}

// validateHosts checks hosts and placement: every problem names its field
// (hosts[1].uri), before any host is asked anything.
func (c *Spec) validateHosts(add func(field, format string, args ...any)) {
	switch c.Placement {
	case "", PlacementSpread, PlacementPack:
	default:
		add("placement", "%q: use spread (each lab on the host with the most room left, the default) or pack (fill the hosts in the order listed)", string(c.Placement))
	}
	if c.Hosts == nil {
		return
	}
	if len(c.Hosts) == 0 {
		add("hosts", "the list is empty: name at least one host, or leave hosts out for the host the template names (this machine by default)")
		return
	}
	if len(c.Hosts) > maxHosts {
		add("hosts", "%d hosts: a class has at most %d", len(c.Hosts), maxHosts)
		return
	}
	names := map[string]int{}
	uris := map[string]int{}
	for i, h := range c.Hosts {
		f := fmt.Sprintf("hosts[%d]", i)
		switch j, dup := names[h.Name]; {
		case h.Name == "":
			add(f+".name", "missing: name the host (class config, status and the handouts name it)")
		case !labelRE.MatchString(h.Name) || len(h.Name) > 63:
			add(f+".name", "%q is not a DNS label: use lowercase letters, digits and '-', starting and ending with a letter or digit", h.Name)
		case dup:
			add(f+".name", "%q is already hosts[%d]: every host needs a name of its own", h.Name, j)
		default:
			names[h.Name] = i
		}
		switch j, dup := uris[h.URI]; {
		case h.URI == "":
			add(f+".uri", "missing: give the host's libvirt URI (qemu:///system for this machine, qemu+ssh://user@host/system for another)")
		case dup:
			add(f+".uri", "%s is also hosts[%d].uri: list each host once", h.URI, j)
		default:
			uris[h.URI] = i
			for _, msg := range uriProblems(h.URI) {
				add(f+".uri", "%s", msg)
			}
		}
		if h.HostDir != "" {
			p := filepath.Clean(h.HostDir)
			if !filepath.IsAbs(h.HostDir) {
				add(f+".hostDir", "%q must be an absolute path on that host", h.HostDir)
			} else if why := spec.SystemDirProblem(p, false); why != "" {
				add(f+".hostDir", "%s %s: each lab placed there gets <hostDir>/labs/<lab>, which lab down removes; use a directory of bootlab's own (the default, /var/lib/bootlab, when the line is left out)", p, why)
			}
		}
		if h.MaxLabs != nil && *h.MaxLabs < 0 {
			add(f+".maxLabs", "%d: give 0 or more (0 places no new lab there), or leave it out for no cap", *h.MaxLabs)
		}
	}
	for _, p := range hostFields {
		if _, set := lookup(c.Template, p); set {
			add("template."+p, "must not be set when the class names hosts: each lab's comes from the host it is placed on (hosts[].uri, hosts[].hostDir)")
		}
	}
	for _, k := range sortedKeys(c.Overrides) {
		for _, p := range hostFields {
			if _, set := lookup(map[string]any(c.Overrides[k]), p); set {
				add("overrides."+k+"."+p, "must not be set per learner when the class names hosts: each lab's comes from the host it is placed on")
			}
		}
	}
}

// uriProblems are what a lab spec's validation says of libvirt.uri uri.
func uriProblems(uri string) []string {
	s := &spec.Spec{Name: "host", Libvirt: spec.Libvirt{URI: uri}}
	s.Defaults()
	var out []string
	if err := s.Validate(); err != nil {
		if ve, ok := err.(*spec.ValidationError); ok {
			for _, fe := range ve.Errs {
				if fe.Field == "libvirt.uri" {
					out = append(out, fe.Msg)
				}
			}
		}
	}
	return out
}

// HostOf is the host of hosts whose URI is uri, or false.
func HostOf(hosts []HostSpec, uri string) (HostSpec, bool) {
	for _, h := range hosts {
		if h.URI == uri {
			return h, true
		}
	}
	return HostSpec{}, false
}

// hostWithKey is the index of the first entry of the class file's hosts
// that has key, when the top level does not: where an unknown field the
// decoder names was written.
func hostWithKey(data []byte, key string) (int, bool) {
	var doc struct {
		Hosts []map[string]any `json:"hosts"`
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil || yaml.Unmarshal(data, &doc) != nil {
		return 0, false
	}
	if _, ok := top[key]; ok {
		return 0, false
	}
	for i, h := range doc.Hosts {
		if _, ok := h[key]; ok {
			return i, true
		}
	}
	return 0, false
}
