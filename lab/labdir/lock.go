package labdir

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/bootlab/bootlab/lab/spec"
)

// Lock takes the lab's lock (LockPath) without waiting: package lab holds it
// while it changes the lab, so that two bootlab commands (a second
// terminal, `make demo` run twice) never change one lab at once and
// overwrite each other's record of what exists.
//
// With create false, a lab directory that holds no state of a lab is not
// this lab's: there is nothing to lock, and nothing is written into it.
// A directory is claimed (Claimable) before the first lock that creates.
func Lock(s *spec.Spec, create bool) (unlock func(), err error) {
	if _, err := os.Lstat(StatePath(s.LabDir)); err != nil && !create {
		return func() {}, nil
	}
	if err := os.MkdirAll(s.LabDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w (check labDir)", s.LabDir, err)
	}
	p := LockPath(s.LabDir)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lab lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lab %s is being changed by another bootlab command (it holds %s): let it finish, then run this again", s.Name, p)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
