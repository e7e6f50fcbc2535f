package fake

import (
	"context"
	"encoding/xml"
	"fmt"
	"sort"
	"sync"

	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
)

// Hypervisor is the in-memory hypervisor.Hypervisor. Its mutating calls
// are recorded ("DefineDomain bootlab-t-master-1", "CreateVolume
// pool/name", ...) for Mutations, and the call equal to FailOn fails.
type Hypervisor struct {
	mu sync.Mutex

	// The objects, by name. A test may read and change them between calls.
	NetworkObjects map[string]*hypervisor.Object
	PoolObjects    map[string]*hypervisor.Object
	// PoolVolumes are each pool's volumes, by pool then volume name.
	PoolVolumes   map[string]map[string]*hypervisor.Volume
	DomainObjects map[string]*hypervisor.Object
	// FilterObjects are the network filters (nwfilter), by name.
	FilterObjects map[string]*hypervisor.Object
	// DomainSnapshots are each domain's snapshots, in the order taken.
	DomainSnapshots map[string][]hypervisor.Snapshot
	// Uploaded is the number of bytes uploaded into each volume, by name.
	Uploaded map[string]int64
	// VolumeXML is the definition of every volume created, by name.
	VolumeXML map[string]string

	// FailOn, when set, is a recorded call that fails with an injected
	// error, e.g. "DefineDomain bootlab-t-master-1".
	FailOn string
	// Machine is what Host returns: the hypervisor's host machine.
	Machine *Machine
	// Caps is what Capabilities returns: New makes it hypervisor.Full();
	// the zero Capabilities play libvirt's test driver.
	Caps hypervisor.Capabilities
	// Closed counts the calls to Close.
	Closed int

	calls   []string
	uuidSeq int
}

// New returns an empty local hypervisor: no objects, a local Machine.
func New() *Hypervisor {
	return &Hypervisor{
		NetworkObjects: map[string]*hypervisor.Object{}, PoolObjects: map[string]*hypervisor.Object{},
		PoolVolumes: map[string]map[string]*hypervisor.Volume{}, DomainObjects: map[string]*hypervisor.Object{},
		FilterObjects:   map[string]*hypervisor.Object{},
		DomainSnapshots: map[string][]hypervisor.Snapshot{}, Uploaded: map[string]int64{},
		VolumeXML: map[string]string{}, Machine: NewMachine(false), Caps: hypervisor.Full(),
	}
}

var _ hypervisor.Hypervisor = (*Hypervisor)(nil)

// Host returns Machine.
func (f *Hypervisor) Host() host.Host { return f.Machine }

// Capabilities returns Caps.
func (f *Hypervisor) Capabilities() hypervisor.Capabilities { return f.Caps }

// Close counts the call (Closed); the objects stay, as a daemon's do.
func (f *Hypervisor) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Closed++
	return nil
}

// call records a mutating call and fails it if it is FailOn.
func (f *Hypervisor) call(format string, args ...any) error {
	c := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, c)
	if f.FailOn != "" && c == f.FailOn {
		return fmt.Errorf("%s: injected failure", c)
	}
	return nil
}

// Mutations returns the mutating calls recorded since New or Reset,
// sorted (steps that run in parallel have no order).
func (f *Hypervisor) Mutations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.calls...)
	sort.Strings(out)
	return out
}

// InOrder returns the mutating calls recorded since New or Reset in the
// order they were made, for a test of what must come after what.
func (f *Hypervisor) InOrder() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Reset forgets the recorded calls and clears FailOn; objects stay.
func (f *Hypervisor) Reset() { f.mu.Lock(); f.calls = nil; f.FailOn = ""; f.mu.Unlock() }

func (f *Hypervisor) uuid() string {
	f.uuidSeq++
	return fmt.Sprintf("00000000-0000-0000-0000-%012d", f.uuidSeq)
}

func unmarshal(x string, v any) error { return xml.Unmarshal([]byte(x), v) }

func nameOf(x string) string {
	var v struct {
		Name string `xml:"name"`
	}
	_ = unmarshal(x, &v)
	return v.Name
}

func notFound(kind, name string) error {
	return fmt.Errorf("%s %s: %w", kind, name, hypervisor.ErrNotFound)
}

func (f *Hypervisor) LibvirtVersion(context.Context) (string, error) { return "9.0.0", nil }
func (f *Hypervisor) DomainTypes(context.Context) ([]string, error)  { return []string{"qemu"}, nil }
func (f *Hypervisor) Networks(context.Context) ([]hypervisor.NetworkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hypervisor.NetworkInfo
	for _, n := range f.NetworkObjects {
		out = append(out, hypervisor.NetworkInfo{Name: n.Name, UUID: n.UUID, Active: n.Active})
	}
	return out, nil
}
