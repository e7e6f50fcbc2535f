package stagecmd

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// bootWait bounds how long a stage command waits for the lab's bootstrap
// to answer SSH: a rehearsal bootstrap answers some seconds after `lab up`
// returns (its agent starts sshd once its network is up).
const bootWait = 90 * time.Second

// dialUntilUp calls dial until it succeeds, dial fails for a reason a
// booting node does not explain, ctx ends or within has passed (0: one
// try). say is called once, at the first failure worth waiting out; tick
// is the pause between tries.
func dialUntilUp[N any](ctx context.Context, dial func() (N, error), within, tick time.Duration, say func()) (N, error) {
	deadline := time.Now().Add(within)
	said := false
	for {
		n, err := dial()
		if err == nil || !booting(err) || ctx.Err() != nil || !time.Now().Add(tick).Before(deadline) {
			return n, err
		}
		if !said {
			say()
			said = true
		}
		select {
		case <-ctx.Done():
			return n, err
		case <-time.After(tick):
		}
	}
}

// booting says whether a dial error is what a node that is still coming up
// gives: nothing routes to it yet, nothing listens yet, or no answer. A
// refused login or a changed host key is not.
func booting(err error) bool {
	for _, e := range []error{syscall.EHOSTUNREACH, syscall.ECONNREFUSED, syscall.ENETUNREACH, syscall.EHOSTDOWN, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
