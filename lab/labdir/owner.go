package labdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"
)

// A lab directory is this lab's when its state.json names the lab: the
// state is written (with the lab's name and UUID) before bootlab writes
// anything else there, and only into a directory that is new or empty, so
// every file in a directory with this lab's state is one bootlab made or
// the user put into bootlab's directory. A directory without state is
// never this lab's, whatever path the spec names: `lab down` removes
// nothing from it.

// leftovers are the files an earlier bootlab may leave in a lab directory
// without its state: the lock (taken before the state is written) and the
// base image record `lab down --keep-images` keeps.
var leftovers = map[string]bool{lockFile: true, baseImageMarker: true}

// NotOursError is a directory a spec names that exists and holds files,
// but no sign that bootlab made it for this lab.
type NotOursError struct {
	Field string   // the spec field: labDir, storage.poolDir, libvirt.hostDir
	Dir   string   // the directory, where it is (host:path for a remote one)
	Files []string // some of what it holds
}

func (e *NotOursError) Error() string {
	files := e.Files
	more := ""
	if len(files) > 5 {
		files, more = files[:5], fmt.Sprintf(" and %d more", len(e.Files)-5)
	}
	return fmt.Sprintf("%s %s already holds files bootlab did not make for this lab (%s%s): nothing was done. "+
		"bootlab builds a lab only in a new or empty directory, so that `lab down` never removes anything else; "+
		"point %s at a new directory (or leave the line out for the default)",
		e.Field, e.Dir, strings.Join(files, ", "), more, e.Field)
}

// Claimable checks that the lab directory may become this lab's: it is not
// a system directory (after following links) and is absent, empty, or
// holds only what an earlier bootlab of this lab left without state.
func Claimable(s *spec.Spec) error {
	dir := filepath.Clean(s.LabDir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		if why := spec.SystemDirProblem(real, true); why != "" {
			return &NotOursError{Field: "labDir", Dir: dir + " (" + real + ")", Files: []string{why}}
		}
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read labDir %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range entries {
		if !leftovers[e.Name()] {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return &NotOursError{Field: "labDir", Dir: dir, Files: foreign}
	}
	return nil
}

// Owned says whether the lab directory holds this lab's state: then, and
// only then, `lab down` removes the files bootlab makes there.
func Owned(s *spec.Spec) (*State, bool) {
	st, err := LoadState(s.LabDir)
	if err != nil || st.CheckIdentity(s) != nil || st.LabName() == "" {
		return nil, false
	}
	return st, true
}

// Cut shortens s for a message: a file's content or a user's input can be
// any length.
func Cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
