package grpctimeout

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := map[string]time.Duration{
		"1H":        time.Hour,
		"2M":        2 * time.Minute,
		"3S":        3 * time.Second,
		"400m":      400 * time.Millisecond,
		"5u":        5 * time.Microsecond,
		"6n":        6,
		"0S":        0,
		"00000001m": time.Millisecond,
		"99999999n": 99999999,
		"99999999S": 99999999 * time.Second,
		"99999999M": 99999999 * time.Minute,
		"99999999H": math.MaxInt64, // about 11,400 years: capped
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "S", "m", "1", "5", "1s", "1h", "1x", "123456789S", "-1S", "+1S", " 1S", "5 m", "1.5S", "1e3m", "١S"} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), "grpc-timeout") || !strings.Contains(err.Error(), Form) {
			t.Errorf("Parse(%q) error %v, want one naming grpc-timeout and the accepted form", in, err)
		}
	}
}

// TestFormat: the encoded value is never larger than the input, fits the 8
// digits the protocol allows, loses less than one unit, and parses back.
func TestFormat(t *testing.T) {
	inputs := []time.Duration{1, 999, time.Microsecond, 99999999, 100000000, 1234567891,
		99999999 * time.Microsecond, 99999999*time.Microsecond + 1, 10 * time.Second, 100 * time.Second,
		27 * time.Hour, 28 * time.Hour, 5 * 365 * 24 * time.Hour, math.MaxInt64}
	for _, d := range inputs {
		s := Format(d)
		if digits := len(s) - 1; digits < 1 || digits > MaxDigits {
			t.Errorf("Format(%v) = %q: %d digits, want 1 to 8", d, s, digits)
		}
		back, err := Parse(s)
		if err != nil {
			t.Errorf("Format(%v) = %q does not parse: %v", d, s, err)
			continue
		}
		unit := Unit(s[len(s)-1])
		if back > d || d-back >= unit {
			t.Errorf("Format(%v) = %q = %v; want at most the input and less than one %v below it", d, s, back, unit)
		}
	}
	// The finest unit that fits is chosen: microseconds for 10s.
	if got := Format(10*time.Second + 1500*time.Nanosecond); got != "10000001u" {
		t.Errorf("Format(10.0000015s) = %q, want 10000001u", got)
	}
}

// FuzzParse checks that any input either parses to a non-negative duration
// that Format writes back no larger, or fails stating the accepted form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1H", "500m", "99999999H", "0n", "", "1x", "123456789S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			if !strings.Contains(err.Error(), Form) {
				t.Fatalf("Parse(%q) error %q does not state the accepted form", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("Parse(%q) = %v, negative", s, d)
		}
		if d > 0 {
			if back, err := Parse(Format(d)); err != nil || back > d {
				t.Fatalf("Parse(%q) = %v; Format gives %q = %v, %v", s, d, Format(d), back, err)
			}
		}
	})
}
