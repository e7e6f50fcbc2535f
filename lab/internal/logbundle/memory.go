package logbundle

import (
	"fmt"
	"path"
)

// Holder keeps a bundle's files in memory: lab/diagnose's Bundle, which a
// live diagnosis walks.
type Holder interface {
	// Add keeps data as the file at rel; name is how evidence names it.
	Add(rel, name string, data []byte) error
	// AddDir records directory rel (and its parents).
	AddDir(rel string)
}

// Memory is a bundle collected into a Holder instead of a tarball (`lab
// diagnose` of a live lab): the same filter and limits as a Writer, and
// MissingFile at the end, but only the files Wants accepts are collected
// and nothing is written to disk.
type Memory struct {
	gate
	to    Holder
	wants func(rel string) bool
}

// NewMemory collects into to the files wants accepts (nil: every file).
func NewMemory(to Holder, lim Limits, wants func(rel string) bool) *Memory {
	return &Memory{gate: newGate(lim), to: to, wants: wants}
}

// Wants is false for a file nobody would read: a gather skips the command
// that makes it.
func (m *Memory) Wants(rel string) bool { return m.wants == nil || m.wants(rel) }

// Dir records directory rel.
func (m *Memory) Dir(rel string) error {
	if !safe(rel) {
		return fmt.Errorf("bundle path %q climbs out of the bundle", rel)
	}
	m.to.AddDir(rel)
	return nil
}

// Add keeps data as the file at rel, through Filter and the limits, as a
// Writer's Add does; a file Wants refuses is dropped unnoted.
func (m *Memory) Add(rel string, data []byte) (int64, error) {
	if !m.Wants(rel) {
		return 0, nil
	}
	data, err := m.admit(rel, data)
	if data == nil || err != nil {
		return 0, err
	}
	if dir := path.Dir(rel); dir != "." {
		m.to.AddDir(dir)
	}
	return int64(len(data)), m.to.Add(rel, "", data)
}

// AddJSON adds v, indented, as the file at rel.
func (m *Memory) AddJSON(rel string, v any) (int64, error) { return addJSON(m.Add, rel, v) }

// Commit adds MissingFile: what was left out or could not be seen.
func (m *Memory) Commit() error {
	data, err := m.missingJSON()
	if err != nil {
		return err
	}
	m.to.AddDir("bootlab")
	return m.to.Add(MissingFile, "", data)
}
