// Package grpctimeout reads and writes the value of gRPC's grpc-timeout
// request header: a count of 1 to 8 ASCII digits followed by one unit letter,
// H (hours), M (minutes), S (seconds), m (milliseconds), u (microseconds) or
// n (nanoseconds), as PROTOCOL-HTTP2.md in the grpc repository defines it.
//
// The reference gateway parses the client's value and writes what is left of
// the call's budget; the suite's raw gRPC client and the echo-backend's tests
// read the value a proxy forwarded. They share this one implementation.
package grpctimeout

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxDigits is the most digits a value may have.
const MaxDigits = 8

// Form is the accepted form of a value, for error messages.
const Form = "accepted: 1 to 8 digits followed by a unit H, M, S, m, u or n, such as 500m or 10S"

// units are the units, finest first, so that Format can pick the finest one
// whose count fits.
var units = []struct {
	letter byte
	d      time.Duration
}{
	{'n', time.Nanosecond},
	{'u', time.Microsecond},
	{'m', time.Millisecond},
	{'S', time.Second},
	{'M', time.Minute},
	{'H', time.Hour},
}

// Unit returns the duration of the unit letter u, or 0 when u is not one.
func Unit(u byte) time.Duration {
	for _, x := range units {
		if x.letter == u {
			return x.d
		}
	}
	return 0
}

// Parse parses a value. A value too large for a time.Duration (more than
// about 292 years, as 99999999H is) gives the largest one, which is as good
// as no deadline. An error quotes v and states Form.
func Parse(v string) (time.Duration, error) {
	if len(v) < 2 || len(v) > MaxDigits+1 {
		return 0, fmt.Errorf("grpc-timeout %q: %s", v, Form)
	}
	digits, per := v[:len(v)-1], Unit(v[len(v)-1])
	if per == 0 {
		return 0, fmt.Errorf("grpc-timeout %q: unknown unit; %s", v, Form)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("grpc-timeout %q: %s", v, Form)
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil { // unreachable: at most 8 ASCII digits
		return 0, fmt.Errorf("grpc-timeout %q: %w", v, err)
	}
	if n > math.MaxInt64/int64(per) {
		return math.MaxInt64, nil
	}
	return time.Duration(n) * per, nil
}

// Format encodes d as a value that is never larger than d: the finest unit
// whose count fits in 8 digits, the count rounded down. d must be positive;
// a proxy that has no time left ends the call instead of sending "0n".
func Format(d time.Duration) string {
	const maxCount = 99999999
	for _, u := range units {
		if n := d / u.d; n <= maxCount {
			return strconv.FormatInt(int64(n), 10) + string(u.letter)
		}
	}
	return strconv.Itoa(maxCount) + "H"
}
