package engine

import (
	"context"
	"encoding/xml"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/labdir"
)

// ListOptions say where to look for labs.
type ListOptions struct {
	// Home is the bootlab home; labs are its labs/*/ directories holding
	// state.json. Empty means DefaultHome().
	Home string
	// URIs are libvirt URIs searched for orphaned labs beyond the ones the
	// lab directories name.
	URIs []string
	// Connect opens the hypervisor at uri. Nil lists the lab directories
	// only.
	Connect hypervisor.Connector
	// Log hears about daemons that could not be searched for orphans.
	Log *slog.Logger
}

// Summary is one lab on the host as `lab list` shows it.
type Summary struct {
	Name    string       `json:"name"`
	Profile spec.Profile `json:"profile,omitempty"`
	URI     string       `json:"uri,omitempty"`
	CIDR    string       `json:"cidr,omitempty"`
	// Dir is the lab directory ("" for a lab found only in libvirt).
	Dir string `json:"dir,omitempty"`
	// NodesUp counts the lab's running domains; NodesTotal its nodes (from
	// the spec, or the domains found for an orphaned lab).
	NodesUp    int `json:"nodesUp"`
	NodesTotal int `json:"nodesTotal"`
	// BootstrapRemoved is set once `lab pivot` took the bootstrap out.
	BootstrapRemoved bool `json:"bootstrapRemoved,omitempty"`
	// Orphaned: libvirt holds networks or domains of this lab but no lab
	// directory records it (removed by hand): neither one in the home nor
	// the one its domains' console logs point at.
	Orphaned bool `json:"orphaned,omitempty"`
	// Network and Domains are the libvirt objects found of an orphaned lab.
	Network string   `json:"network,omitempty"`
	Domains []string `json:"domains,omitempty"`
	// Verify is the last `lab verify` result, if any.
	Verify *labdir.VerifyRecord `json:"verify,omitempty"`
	// Error says why part of the lab could not be read (its state file, or
	// its libvirt daemon).
	Error string `json:"error,omitempty"`

	// Spec and State are the lab's recorded effective spec and state (nil
	// for an orphaned lab). Never printed: the spec names key and pull
	// secret paths.
	Spec  *spec.Spec    `json:"-"`
	State *labdir.State `json:"-"`
}

// List finds every bootlab lab on the host: each lab directory under
// Home/labs holding a state.json; each lab whose domains point at a lab
// directory elsewhere (labDir: in its spec); and, as orphaned, each lab
// whose libvirt network or domains carry bootlab's name or metadata but
// which has no directory at all.
// Labs are sorted by name. A lab that cannot be read is listed with Error
// rather than failing the whole list.
func List(ctx context.Context, opts ListOptions) ([]Summary, error) {
	home := opts.Home
	if home == "" {
		home = spec.DefaultHome()
	}
	labs, err := listDirs(home)
	if err != nil {
		return nil, err
	}
	if opts.Connect == nil {
		return labs, nil
	}
	uris := []string{}
	seen := map[string]bool{}
	for _, u := range append(labURIs(labs), opts.URIs...) {
		if u != "" && !seen[u] {
			seen[u] = true
			uris = append(uris, u)
		}
	}
	known := map[string]bool{}
	for _, l := range labs {
		known[l.Name] = true
	}
	for _, uri := range uris {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		found, err := scanURI(ctx, opts.Connect, uri, opts.Log)
		if err != nil {
			if opts.Log != nil {
				opts.Log.Warn("could not search libvirt for labs", "uri", uri, "err", err)
			}
			for i := range labs {
				if labs[i].URI == uri && labs[i].Error == "" {
					labs[i].Error = err.Error()
				}
			}
			continue
		}
		for i := range labs {
			if labs[i].URI != uri || labs[i].Spec == nil {
				continue
			}
			labs[i].NodesUp = found.running(labs[i].Spec)
		}
		for _, o := range found.orphans(known) {
			known[o.Name] = true
			// A lab whose labDir: is outside the home is found through
			// its domains' console log paths, and is no orphan.
			if dir := found.labDir(o.Name); dir != "" {
				ref := labdir.Ref{Name: o.Name, Dir: dir}
				if ref.State, ref.Err = labdir.LoadState(dir); ref.Err == nil && ref.State.CheckIdentity(&spec.Spec{Name: o.Name}) != nil {
					ref.State, ref.Err = nil, fmt.Errorf("%s holds another lab", dir)
				}
				l := summarize(ref)
				if l.Spec != nil && l.URI == uri {
					l.NodesUp = found.running(l.Spec)
					labs = append(labs, l)
					continue
				}
			}
			o.URI = uri
			labs = append(labs, o)
		}
	}
	sort.SliceStable(labs, func(i, j int) bool { return labs[i].Name < labs[j].Name })
	return labs, nil
}

// listDirs summarizes every lab labdir.Find finds under home.
func listDirs(home string) ([]Summary, error) {
	refs, err := labdir.Find(home)
	if err != nil {
		return nil, err
	}
	labs := []Summary{}
	for _, ref := range refs {
		labs = append(labs, summarize(ref))
	}
	return labs, nil
}

// summarize describes one lab found by its directory.
func summarize(ref labdir.Ref) Summary {
	l := Summary{Name: ref.Name, Dir: ref.Dir}
	st := ref.State
	switch {
	case ref.Err != nil:
		l.Error = ref.Err.Error()
	case st.Spec == nil:
		l.State = st
		l.Error = "not up: no `bootlab lab up` of this lab has completed (`bootlab lab up --name " + ref.Name + "` finishes it, `bootlab lab down --name " + ref.Name + "` removes what it made)"
	default:
		l.State, l.Spec = st, st.Spec
		l.Profile, l.URI, l.CIDR = st.Spec.Profile, st.Spec.Libvirt.URI, st.Spec.Network.CIDR
		l.NodesTotal = len(st.Spec.Nodes)
		l.BootstrapRemoved = st.BootstrapRemoved
	}
	labUUID := ""
	if st != nil {
		labUUID = st.UUID
	}
	if rec, err := labdir.LoadVerifyRecord(ref.Dir, labUUID); err != nil {
		if l.Error == "" {
			l.Error = err.Error()
		}
	} else {
		l.Verify = rec
	}
	return l
}

// labDirOf finds the lab directory of a domain bootlab defined: its serial
// console logs to <labDir>/console/<node>.log. It returns "" unless that
// directory's state records the lab called name, so a path that only looks
// right (another lab's, or one on a remote host) is not taken for it.
func labDirOf(domainXML, name string) string {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil || d.Devices == nil {
		return ""
	}
	for _, sr := range d.Devices.Serials {
		if sr.Log == nil || !labdir.IsConsoleLog(sr.Log.File) {
			continue
		}
		dir := filepath.Dir(filepath.Dir(sr.Log.File))
		if st, err := labdir.LoadState(dir); err == nil && st.Spec != nil && st.Spec.Name == name {
			return dir
		}
	}
	return ""
}

func labURIs(labs []Summary) []string {
	var out []string
	for _, l := range labs {
		out = append(out, l.URI)
	}
	return out
}

// libvirtLabs is what one libvirt daemon holds of bootlab: domains by lab
// (from their metadata) and lab networks.
type libvirtLabs struct {
	domains  map[string][]hypervisor.Object
	networks map[string]string // lab -> network name
}

func scanURI(ctx context.Context, connect hypervisor.Connector, uri string, log *slog.Logger) (*libvirtLabs, error) {
	hv, err := connect(ctx, uri, log)
	if err != nil {
		return nil, fmt.Errorf("libvirt %s: %w", uri, err)
	}
	defer hv.Close()
	found := &libvirtLabs{domains: map[string][]hypervisor.Object{}, networks: map[string]string{}}
	doms, err := hv.Domains(ctx)
	if err != nil {
		return nil, fmt.Errorf("list domains on %s: %w", uri, err)
	}
	for _, d := range doms {
		if md := plan.ParseLabMetadata(d.XML); md != nil && md.Name != "" {
			found.domains[md.Name] = append(found.domains[md.Name], d)
		}
	}
	nets, err := hv.Networks(ctx)
	if err != nil {
		return nil, fmt.Errorf("list networks on %s: %w", uri, err)
	}
	for _, n := range nets {
		if !strings.HasPrefix(n.Name, "bootlab-") {
			continue
		}
		// A network carrying bootlab metadata names its lab; one without
		// is bootlab's by name (bootlab-<lab>) when it has no foreign metadata.
		name := strings.TrimPrefix(n.Name, "bootlab-")
		if o, err := hv.LookupNetwork(ctx, n.Name); err == nil {
			if md, foreign := networkLabName(o.XML); foreign {
				continue
			} else if md != "" {
				name = md
			}
		}
		found.networks[name] = n.Name
	}
	return found, nil
}

// networkLabName returns the lab named by a network's bootlab metadata, and
// foreign=true when the network carries metadata but not bootlab's.
func networkLabName(networkXML string) (name string, foreign bool) {
	var nx libvirtxml.Network
	if err := nx.Unmarshal(networkXML); err != nil || nx.Metadata == nil || strings.TrimSpace(nx.Metadata.XML) == "" {
		return "", false
	}
	if !strings.Contains(nx.Metadata.XML, plan.MetadataNamespace) {
		return "", true
	}
	dec := xml.NewDecoder(strings.NewReader("<m>" + nx.Metadata.XML + "</m>"))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Space == plan.MetadataNamespace {
			for _, a := range se.Attr {
				if a.Name.Local == "name" {
					return a.Value, false
				}
			}
		}
	}
}

// labDir is the lab directory the lab's domains point at, or "".
func (f *libvirtLabs) labDir(name string) string {
	for _, d := range f.domains[name] {
		if dir := labDirOf(d.XML, name); dir != "" {
			return dir
		}
	}
	return ""
}

// running counts the spec's nodes whose domain runs and carries this lab's metadata.
func (f *libvirtLabs) running(s *spec.Spec) int {
	n := 0
	for _, d := range f.domains[s.Name] {
		if !d.Active {
			continue
		}
		if md := plan.ParseLabMetadata(d.XML); md != nil {
			if _, ok := s.Node(md.Node); ok && d.Name == s.DomainName(spec.Node{Name: md.Node}) {
				n++
			}
		}
	}
	return n
}

// orphans are the labs libvirt holds that no lab directory names.
func (f *libvirtLabs) orphans(known map[string]bool) []Summary {
	names := map[string]bool{}
	for n := range f.domains {
		names[n] = true
	}
	for n := range f.networks {
		names[n] = true
	}
	var out []Summary
	for name := range names {
		if known[name] {
			continue
		}
		l := Summary{Name: name, Orphaned: true, Network: f.networks[name], Domains: []string{}}
		for _, d := range f.domains[name] {
			l.Domains = append(l.Domains, d.Name)
			l.NodesTotal++
			if d.Active {
				l.NodesUp++
			}
		}
		sort.Strings(l.Domains)
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// OrphanHint says what an orphaned lab is and how to remove what is left of
// it: `lab down` deletes its domains (they carry the lab's metadata), but a
// network whose UUID no lab state records is left for the user to remove.
func (l *Summary) OrphanHint() string {
	if !l.Orphaned {
		return ""
	}
	var parts []string
	if len(l.Domains) > 0 {
		parts = append(parts, fmt.Sprintf("`bootlab lab down --name %s --uri %s` deletes its domains", l.Name, l.URI))
	}
	if l.Network != "" {
		parts = append(parts, fmt.Sprintf("`virsh -c %s net-destroy %s; virsh -c %s net-undefine %s` its network", l.URI, l.Network, l.URI, l.Network))
	}
	return fmt.Sprintf("lab %s is orphaned, found in libvirt on %s but in no lab directory (none in the bootlab home, none where its domains point); if it is left over, %s",
		l.Name, l.URI, strings.Join(parts, " and "))
}
