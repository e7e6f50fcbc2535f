package labdir

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/lab/spec"
)

// State is what bootlab records in the lab directory beside libvirt's own
// state: the effective spec it applied, the UUIDs of the libvirt objects it
// created (so `down` deletes those and nothing else), and lab phase flags.
type State struct {
	// Name and UUID are the lab's identity, written when its directory is
	// first made (before any libvirt object exists) and never changed: a
	// spec naming another lab is refused here, and every domain carries the
	// UUID, so a lab made from a copied spec can never act on this one.
	Name string `json:"name,omitempty"`
	UUID string `json:"uuid,omitempty"`
	// Class is the class (`bootlab class`) the lab was built for, if any:
	// `class down` removes exactly the labs whose state names their class.
	Class string `json:"class,omitempty"`
	// Libvirt is where the lab's objects are made (its libvirt URI and
	// directory on that host), recorded with its identity: a lab whose
	// first up was cut short, with no Spec yet, is still looked for on its
	// host, not on this machine.
	Libvirt *spec.Libvirt `json:"libvirt,omitempty"`
	// Spec is the effective (defaulted) spec of the last `up` that
	// succeeded: what exists. A refused or failed `up` leaves it as it was.
	Spec *spec.Spec `json:"spec"`
	// NetworkUUID and PoolUUID are set once bootlab has defined them.
	NetworkUUID string `json:"networkUUID,omitempty"`
	PoolUUID    string `json:"poolUUID,omitempty"`
	// BootVolumes are the boot file volumes (BootVolumePrefix) uploaded
	// completely, by name: one present but not listed was cut short and is
	// uploaded again; one listed is never uploaded again (its name carries
	// its content's digest).
	BootVolumes map[string]bool `json:"bootVolumes,omitempty"`
	// Accelerator is the one `up` chose (kvm or tcg).
	Accelerator spec.Accelerator `json:"accelerator,omitempty"`
	// BootstrapRemoved is set by `lab pivot`: the load balancer no longer
	// lists the bootstrap and `up` does not add it back.
	BootstrapRemoved bool `json:"bootstrapRemoved,omitempty"`
	// HostDNS records how the host was told to resolve the lab domain, so
	// `down` can undo exactly that.
	HostDNS HostDNS `json:"hostDNS,omitzero"`
	// Restored is the last checkpoint restore: a node it resumed from memory
	// runs in a qemu started then, but continues a guest run (and probe
	// reports) that began before.
	Restored *RestoreRecord `json:"restored,omitempty"`
	// Resets are the power resets `lab reboot --hard` gave, by node name:
	// a reset writes no report, so this is how `lab status` knows the node
	// is rebooting until its next boot reports.
	Resets map[string]ResetRecord `json:"resets,omitempty"`
	// Updated is when the state was last written.
	Updated time.Time `json:"updated"`
}

// RestoreRecord is when a checkpoint restore reverted the nodes.
type RestoreRecord struct {
	Checkpoint string    `json:"checkpoint"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
}

// Resumed is true when a domain whose qemu started at since was started by
// this restore (its guest continues an earlier run).
func (r *RestoreRecord) Resumed(since time.Time) bool {
	return r != nil && !since.IsZero() && !since.Before(r.Started.Add(-time.Second)) && !since.After(r.Finished.Add(time.Second))
}

// ResetRecord is a power reset of one node's VM.
type ResetRecord struct {
	// At is when the reset was given (host clock).
	At time.Time `json:"at"`
	// Boot is the boot (wire.Report.Boot) of the node's last report before
	// the reset, zero when it had written none: a report of another boot
	// is the next boot's.
	Boot time.Time `json:"boot,omitzero"`
}

// Pending is true while a node reset at r has not reported since: its
// last report is still of the boot the reset ended (or it has written
// none), and its VM is the one that was reset (a qemu started after the
// reset, since, as by `lab up` or a checkpoint restore, is another run).
func (r ResetRecord) Pending(lastBoot, since time.Time) bool {
	if !since.IsZero() && since.After(r.At) {
		return false
	}
	return lastBoot.IsZero() || lastBoot.Equal(r.Boot)
}

// ErrNoState is returned by LoadState when the lab directory has no state.
var ErrNoState = errors.New("no lab state")

// NoStateIn is the error for labDir recording no lab yet (ErrNoState,
// which app.Run maps to its own exit code), saying what to run.
func NoStateIn(labDir string) error {
	return fmt.Errorf("%w in %s: run `bootlab lab up` first", ErrNoState, labDir)
}

// LoadState reads the state of the lab in labDir.
func LoadState(labDir string) (*State, error) {
	data, err := os.ReadFile(StatePath(labDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, NoStateIn(labDir)
	}
	if err != nil {
		return nil, fmt.Errorf("read lab state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("parse lab state %s: %w", StatePath(labDir), err)
	}
	return &st, nil
}

// Save writes the state atomically (0600: it names key and pull-secret paths).
func (st *State) Save(labDir string) error {
	st.Updated = time.Now().UTC()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(labDir, 0o755); err != nil {
		return fmt.Errorf("create lab directory: %w", err)
	}
	if err := atomicfile.Write(StatePath(labDir), data, 0o600); err != nil {
		return fmt.Errorf("lab state: %w", err)
	}
	return nil
}

// LabName is the name of the lab the state belongs to (older states kept it
// only in their spec).
func (st *State) LabName() string {
	if st.Name != "" {
		return st.Name
	}
	if st.Spec != nil {
		return st.Spec.Name
	}
	return ""
}

// IdentityError is returned when a spec names one lab but its lab directory
// holds another: acting on it would act on the other lab.
type IdentityError struct {
	Dir     string // the lab directory
	DirLab  string // the lab recorded there
	SpecLab string // the lab the spec names
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("lab directory %s belongs to lab %q, but the spec names lab %q: nothing was done. "+
		"A spec copied from `bootlab lab config` of %q keeps its labDir and storage.poolDir: remove both lines from the copy "+
		"(each lab then gets its own) or point them at new paths", e.Dir, e.DirLab, e.SpecLab, e.DirLab)
}

// CheckIdentity refuses a state that belongs to a lab other than s.
func (st *State) CheckIdentity(s *spec.Spec) error {
	if name := st.LabName(); name != "" && name != s.Name {
		return &IdentityError{Dir: s.LabDir, DirLab: name, SpecLab: s.Name}
	}
	return nil
}

// NewLabUUID returns a random RFC 4122 version 4 UUID.
func NewLabUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Resolve is the one rule every command uses to find the lab a spec names.
// It reads the state in the spec's lab directory and refuses one that
// belongs to another lab. When the lab has been built, the applied spec is
// the one its last successful `up` recorded (what exists: addresses,
// images); otherwise it is s itself. st is nil when the lab has no state.
func Resolve(s *spec.Spec) (applied *spec.Spec, st *State, err error) {
	st, err = LoadState(s.LabDir)
	if errors.Is(err, ErrNoState) {
		return s, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := st.CheckIdentity(s); err != nil {
		return nil, nil, err
	}
	if st.Spec != nil {
		return st.Spec, st, nil
	}
	if st.Libvirt != nil && *st.Libvirt != s.Libvirt {
		where := *s
		where.Libvirt = *st.Libvirt
		return &where, st, nil
	}
	return s, st, nil
}

// Ref is a lab found on this host by its directory.
type Ref struct {
	Name  string
	Dir   string
	State *State
	// Err says why the state could not be read (State is then nil).
	Err error
}

// Find lists the labs whose directories are under home/labs (the
// default place, or a symlink there to a lab directory elsewhere), sorted by
// name; a directory without state.json is not a lab yet.
func Find(home string) ([]Ref, error) {
	dir := filepath.Join(home, "labs")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list labs in %s: %w", dir, err)
	}
	var out []Ref
	for _, e := range entries {
		labDir := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(labDir); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := os.Stat(StatePath(labDir)); err != nil {
			continue
		}
		ref := Ref{Name: e.Name(), Dir: labDir}
		if ref.State, ref.Err = LoadState(labDir); ref.Err == nil {
			if name := ref.State.LabName(); name != "" {
				ref.Name = name
			}
		}
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
