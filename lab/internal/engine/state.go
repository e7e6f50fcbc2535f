package engine

import (
	"errors"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab/labdir"
)

// UpdateState changes the lab's recorded state under the lab's lock: it
// loads the state (a new one when there is none and create is set), checks
// it is this lab's, applies change, and saves it. Up, Down and the
// checkpoints record through their run; every other change a command makes
// to a lab's record (host DNS set up or undone, the bootstrap pivoted away,
// a class's claim on a lab directory) goes through here, so two commands
// never interleave their writes. change returning an error saves nothing.
func UpdateState(s *spec.Spec, create bool, change func(st *labdir.State) error) error {
	unlock, err := labdir.Lock(s, create)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := labdir.LoadState(s.LabDir)
	switch {
	case errors.Is(err, labdir.ErrNoState) && create:
		st = &labdir.State{}
	case err != nil:
		return err
	}
	if err := st.CheckIdentity(s); err != nil {
		return err
	}
	if err := change(st); err != nil {
		return err
	}
	return st.Save(s.LabDir)
}
