package class

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/lab/spec"
)

// PlacementFile records, in the class's directory, which host each lab
// of a class with hosts was placed on: written by class up before it
// creates anything, so a lab whose build was cut short (its state holds
// no spec yet) is found on its host by class up, status and down.
const PlacementFile = "placement.json"

// Placed is one lab's entry in PlacementFile.
type Placed struct {
	Host    string `json:"host"`
	URI     string `json:"uri"`
	HostDir string `json:"hostDir,omitempty"`
}

type placementDoc struct {
	Labs map[string]Placed `json:"labs"`
}

// ReadPlacement reads the placement class up recorded in dir (the
// class's directory), by lab name; none when there is no record.
func ReadPlacement(dir string) (map[string]Placed, error) {
	data, err := os.ReadFile(filepath.Join(dir, PlacementFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the class's placement: %w", err)
	}
	var doc placementDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read the class's placement %s: %w", filepath.Join(dir, PlacementFile), err)
	}
	return doc.Labs, nil
}

// WritePlacement records where the plan's labs are, beside what dir
// records of labs the plan no longer has (they stay where they are until
// class down removes them). A class without hosts records nothing.
func WritePlacement(dir string, p *Plan) error {
	if len(p.Hosts) == 0 {
		return nil
	}
	labs, err := ReadPlacement(dir)
	if err != nil {
		return err
	}
	if labs == nil {
		labs = map[string]Placed{}
	}
	for _, l := range p.Labs {
		labs[l.Spec.Name] = Placed{Host: l.Host, URI: l.Spec.Libvirt.URI, HostDir: l.Spec.Libvirt.HostDir}
	}
	data, err := json.MarshalIndent(placementDoc{Labs: labs}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record the class's placement: %w", err)
	}
	return atomicfile.Write(filepath.Join(dir, PlacementFile), append(data, '\n'), 0o644)
}

// PlacedHosts are the hosts of record by lab name (Facts.Placed).
func PlacedHosts(record map[string]Placed) map[string]string {
	out := make(map[string]string, len(record))
	for lab, p := range record {
		out[lab] = p.Host
	}
	return out
}

// Locate gives s, the spec of a lab of no complete up (its name and
// directory), the host record placed it on: where what its build made is.
func Locate(s *spec.Spec, record map[string]Placed) {
	if p, ok := record[s.Name]; ok {
		s.Libvirt.URI, s.Libvirt.HostDir = p.URI, p.HostDir
	}
}
