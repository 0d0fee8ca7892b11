// Package retrydelay holds the bounds of the doubling delay with which
// gatewitness's loops retry (internal/reconcile after a failed pass,
// internal/watchloop after a watch that would not open).
package retrydelay

import "time"

// Default bounds, for options left zero.
const (
	DefaultMin = 50 * time.Millisecond
	DefaultMax = 5 * time.Second
)

// Bounds returns the bounds of a retry delay: lo and hi, a zero or
// negative one replaced by its default, and hi raised to lo if it is lower.
func Bounds(lo, hi time.Duration) (time.Duration, time.Duration) {
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	return lo, max(hi, lo)
}
