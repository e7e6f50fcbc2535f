package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// Change is one thing `lab up` would do to converge the lab: what its dry
// run prints.
type Change struct {
	// Action is define, redefine, update, create, upload, start, stop,
	// remove or reload; build or check (the probe image), revert or
	// replace (a checkpoint's restore).
	Action string `json:"action"`
	// Kind is network, pool, volume, domain, loadBalancer or labDir; what
	// the preparer makes (sshKey, pki, probeImage, kubeVolume, ignition); snapshot,
	// consoleLogs, hostDir and hostDNS in the plans of down and restore.
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
}

func (c Change) String() string {
	s := fmt.Sprintf("%-9s %-12s %s", c.Action, c.Kind, c.Name)
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// sortedChanges orders a plan the way up makes the objects (directories,
// network, pool, volumes, load balancer, domains), by name within a kind:
// up creates volumes and domains in parallel, a plan reads in one order.
func sortedChanges(cs []Change) []Change {
	kind := map[string]int{"labDir": 0, "network": 1, "pool": 2, "volume": 3, "loadBalancer": 4, "domain": 5}
	action := map[string]int{"create": 0, "define": 0, "redefine": 0, "update": 1, "upload": 1, "stop": 2, "start": 3, "resume": 3, "reload": 3, "remove": 4}
	out := append([]Change(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if kind[a.Kind] != kind[b.Kind] {
			return kind[a.Kind] < kind[b.Kind]
		}
		if a.Kind != "network" && a.Name != b.Name {
			return a.Name < b.Name
		}
		return action[a.Action] < action[b.Action]
	})
	return out
}

// planningHV passes every read to the real hypervisor and records every
// change instead of making it: `lab up --dry-run` runs Up's own steps over
// it, so the plan it prints is what up would do, decided by the same code.
type planningHV struct {
	hypervisor.Hypervisor
	mu      sync.Mutex
	changes []Change
	// defined are objects defined in this plan: they "exist" from then on.
	defined map[string]*hypervisor.Object
	// started are the domains this plan starts (paused, then resumed).
	started map[string]bool
}

func newPlanningHV(hv hypervisor.Hypervisor) *planningHV {
	return &planningHV{Hypervisor: hv, defined: map[string]*hypervisor.Object{}, started: map[string]bool{}}
}

func (p *planningHV) note(action, kind, name, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.changes = append(p.changes, Change{Action: action, Kind: kind, Name: name, Detail: detail})
}

func (p *planningHV) define(kind, xml string, exists bool) *hypervisor.Object {
	name := xmlName(xml)
	action := "define"
	if exists {
		action = "redefine"
	}
	p.note(action, kind, name, "")
	p.mu.Lock()
	defer p.mu.Unlock()
	o := &hypervisor.Object{Name: name, XML: xml}
	p.defined[kind+"/"+name] = o
	return o
}

func (p *planningHV) DefineNetwork(_ context.Context, xml string) (*hypervisor.Object, error) {
	return p.define("network", xml, false), nil
}
func (p *planningHV) StartNetwork(_ context.Context, name string) error {
	p.note("start", "network", name, "")
	return nil
}
func (p *planningHV) SetNetworkAutostart(context.Context, string) error { return nil }
func (p *planningHV) DestroyNetwork(_ context.Context, name string) error {
	p.note("stop", "network", name, "")
	return nil
}
func (p *planningHV) UndefineNetwork(_ context.Context, name string) error {
	p.note("remove", "network", name, "")
	return nil
}
func (p *planningHV) UpdateNetwork(_ context.Context, name string, e hypervisor.NetworkEdit) error {
	verb := "add"
	if e.Delete {
		verb = "delete"
	}
	p.note("update", "network", name, verb+" "+string(e.Section)+" "+e.XML)
	return nil
}
func (p *planningHV) DefineFilter(_ context.Context, xml string) (*hypervisor.Object, error) {
	return p.define("network filter", xml, false), nil
}
func (p *planningHV) UndefineFilter(_ context.Context, name string) error {
	p.note("remove", "network filter", name, "")
	return nil
}
func (p *planningHV) UpdateDomainInterface(_ context.Context, name, xml string) error {
	p.note("update", "domain", name, "interface "+xml)
	return nil
}
func (p *planningHV) DefinePool(_ context.Context, xml string) (*hypervisor.Object, error) {
	return p.define("pool", xml, false), nil
}
func (p *planningHV) StartPool(_ context.Context, name string) error {
	p.note("start", "pool", name, "")
	return nil
}
func (p *planningHV) SetPoolAutostart(context.Context, string) error { return nil }
func (p *planningHV) DestroyPool(_ context.Context, name string) error {
	p.note("stop", "pool", name, "")
	return nil
}
func (p *planningHV) DeletePool(_ context.Context, name string) error {
	p.note("remove", "pool", name, "its directory")
	return nil
}
func (p *planningHV) UndefinePool(_ context.Context, name string) error {
	p.note("remove", "pool", name, "")
	return nil
}

// LookupVolume finds no volume in a pool this plan only defines.
func (p *planningHV) LookupVolume(ctx context.Context, pool, name string) (*hypervisor.Volume, error) {
	p.mu.Lock()
	_, planned := p.defined["pool/"+pool]
	p.mu.Unlock()
	if planned {
		return nil, fmt.Errorf("volume %s/%s: %w", pool, name, hypervisor.ErrNotFound)
	}
	return p.Hypervisor.LookupVolume(ctx, pool, name)
}

// Volumes lists nothing in a pool this plan only defines.
func (p *planningHV) Volumes(ctx context.Context, pool string) ([]hypervisor.Volume, error) {
	p.mu.Lock()
	_, planned := p.defined["pool/"+pool]
	p.mu.Unlock()
	if planned {
		return nil, nil
	}
	return p.Hypervisor.Volumes(ctx, pool)
}
func (p *planningHV) CreateVolume(_ context.Context, pool, xml string) (*hypervisor.Volume, error) {
	p.note("create", "volume", pool+"/"+xmlName(xml), "")
	return &hypervisor.Volume{Name: xmlName(xml)}, nil
}
func (p *planningHV) CopyVolume(_ context.Context, pool, xml, fromPool, fromName string) (*hypervisor.Volume, error) {
	p.note("copy", "volume", pool+"/"+xmlName(xml), "from "+fromPool+"/"+fromName)
	return &hypervisor.Volume{Name: xmlName(xml)}, nil
}
func (p *planningHV) UploadVolume(_ context.Context, pool, name string, _ io.Reader, size int64) error {
	p.note("upload", "volume", pool+"/"+name, fmt.Sprintf("%d MiB", size>>20))
	return nil
}

// DeleteVolume notes a volume that is there; one that is not is not
// found, as the hypervisor would say (removeNode after a pivot).
func (p *planningHV) DeleteVolume(ctx context.Context, pool, name string) error {
	if _, err := p.LookupVolume(ctx, pool, name); err != nil {
		return err
	}
	p.note("remove", "volume", pool+"/"+name, "")
	return nil
}
func (p *planningHV) DefineDomain(ctx context.Context, xml string) (*hypervisor.Object, error) {
	old, err := p.Hypervisor.LookupDomain(ctx, xmlName(xml))
	if err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
		return nil, err
	}
	o := p.define("domain", xml, old != nil)
	if old != nil {
		o.UUID, o.Active = old.UUID, old.Active
	}
	return o, nil
}
func (p *planningHV) StartDomain(_ context.Context, name string) error {
	p.note("start", "domain", name, "")
	return nil
}
func (p *planningHV) StartDomainPaused(_ context.Context, name string) error {
	p.mu.Lock()
	p.started[name] = true
	p.mu.Unlock()
	p.note("start", "domain", name, "")
	return nil
}

// ResumeDomain notes a domain found paused; one this plan starts is
// noted once, as started.
func (p *planningHV) ResumeDomain(_ context.Context, name string) error {
	p.mu.Lock()
	started := p.started[name]
	p.mu.Unlock()
	if !started {
		p.note("resume", "domain", name, "paused")
	}
	return nil
}
func (p *planningHV) ResetDomain(_ context.Context, name string) error {
	p.note("reset", "domain", name, "")
	return nil
}
func (p *planningHV) DestroyDomain(_ context.Context, name string) error {
	p.note("stop", "domain", name, "")
	return nil
}
func (p *planningHV) UndefineDomain(_ context.Context, name string) error {
	p.note("remove", "domain", name, "")
	return nil
}

// xmlName reads the <name> of a libvirt object definition.
func xmlName(x string) string {
	_, rest, ok := strings.Cut(x, "<name>")
	if !ok {
		return "?"
	}
	name, _, _ := strings.Cut(rest, "</name>")
	return name
}

// Snapshot changes are noted, never made (`down` of a dry run lists them).
func (p *planningHV) CreateSnapshot(_ context.Context, domain, xml string) error {
	p.note("create", "snapshot", domain+"/"+xmlName(xml), "")
	return nil
}
func (p *planningHV) RevertSnapshot(_ context.Context, domain, name string) error {
	p.note("revert", "snapshot", domain+"/"+name, "")
	return nil
}
func (p *planningHV) DeleteSnapshot(_ context.Context, domain, name string) error {
	p.note("remove", "snapshot", domain+"/"+name, "")
	return nil
}

// A dry run starts no node from a saved image (labRun.saved is nil); were
// it asked, the calls are noted, never made.
func (p *planningHV) CreateDomain(_ context.Context, xml string) error {
	p.note("create", "domain", xmlName(xml), "transient")
	return nil
}
func (p *planningHV) SaveDomain(_ context.Context, name, _ string) error {
	p.note("save", "domain", name, "")
	return nil
}
func (p *planningHV) RestoreDomainPaused(_ context.Context, path string) error {
	p.note("restore", "domain", path, "")
	return nil
}
