// Package ctxsleep waits for a duration unless a context ends first: the
// pause between retries, between a fault's chunks and between watch
// re-opens, each of which must stop as soon as its request or component is
// cancelled. time.Sleep cannot be interrupted and a bare time.After leaks a
// timer until it fires, which is why each of those places used to write the
// same select by hand.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, whichever comes first. It reports
// whether the whole of d passed with ctx still live. A d of zero or less
// does not wait and reports whether ctx is live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
