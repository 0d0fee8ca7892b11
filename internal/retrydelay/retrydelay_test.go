package retrydelay

import (
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	for _, tc := range []struct{ lo, hi, wantLo, wantHi time.Duration }{
		{0, 0, DefaultMin, DefaultMax},
		{-1, -1, DefaultMin, DefaultMax},
		{time.Millisecond, time.Second, time.Millisecond, time.Second},
		{time.Minute, 0, time.Minute, time.Minute}, // hi defaults to 5s, below lo
		{time.Second, time.Millisecond, time.Second, time.Second},
	} {
		if lo, hi := Bounds(tc.lo, tc.hi); lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("Bounds(%v, %v) = %v, %v; want %v, %v", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}
