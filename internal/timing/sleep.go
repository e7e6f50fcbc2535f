package timing

import (
	"context"
	"time"
)

// Sleep waits d, or less when ctx ends first; it reports whether the
// whole of d passed (false: ctx ended, stop). A d of zero or less returns
// at once, true unless ctx has already ended. Every poll loop of bootlab
// and its guest agent waits with it, so a cancelled command (Ctrl-C, a
// deadline) never sits out an interval.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
