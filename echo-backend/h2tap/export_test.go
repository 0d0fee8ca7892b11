package h2tap

import "time"

// SetGoAwayGrace sets the grace period GoAway gives the streams it lets
// complete, for GoAway calls made until the returned function restores it.
func SetGoAwayGrace(d time.Duration) (restore func()) {
	old := goAwayGrace
	goAwayGrace = d
	return func() { goAwayGrace = old }
}
