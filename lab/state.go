package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// State is what bootlab records in the lab directory beside libvirt's own
// state: the effective spec it applied, the UUIDs of the libvirt objects it
// created (so `down` deletes those and nothing else), and lab phase flags.
type State struct {
	// Spec is the effective (defaulted) spec of the last `up`.
	Spec *Spec `json:"spec"`
	// NetworkUUID and PoolUUID are set once bootlab has defined them.
	NetworkUUID string `json:"networkUUID,omitempty"`
	PoolUUID    string `json:"poolUUID,omitempty"`
	// Accelerator is the one `up` chose (kvm or tcg).
	Accelerator Accelerator `json:"accelerator,omitempty"`
	// BootstrapRemoved is set by `lab pivot`: the load balancer no longer
	// lists the bootstrap and `up` does not add it back.
	BootstrapRemoved bool `json:"bootstrapRemoved,omitempty"`
	// HostDNS records how the host was told to resolve the lab domain, so
	// `down` can undo exactly that ("resolved:<link>", "networkmanager:<file>", "").
	HostDNS string `json:"hostDNS,omitempty"`
	// Updated is when the state was last written.
	Updated time.Time `json:"updated"`
}

// StatePath is the state file of the lab whose directory is labDir.
func StatePath(labDir string) string { return filepath.Join(labDir, "state.json") }

// ErrNoState is returned by LoadState when the lab directory has no state.
var ErrNoState = errors.New("no lab state")

// LoadState reads the state of the lab in labDir.
func LoadState(labDir string) (*State, error) {
	data, err := os.ReadFile(StatePath(labDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s: run `bootlab lab up` first", ErrNoState, labDir)
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
	tmp := StatePath(labDir) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write lab state: %w", err)
	}
	return os.Rename(tmp, StatePath(labDir))
}
