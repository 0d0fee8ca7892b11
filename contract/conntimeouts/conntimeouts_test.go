package conntimeouts

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    time.Duration
		clamped bool
	}{
		{"0", 0, false},
		{"1500", 1500 * time.Millisecond, false},
		{"250us", 250 * time.Microsecond, false},
		{"2ms", 2 * time.Millisecond, false},
		{"30s", 30 * time.Second, false},
		{"5m", 5 * time.Minute, false},
		{"1h", time.Hour, false},
		{"1d", 24 * time.Hour, false},
		{"1m30s", 90 * time.Second, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{"0s", 0, false},
		{"2147483647", MaxTimeout, false},
		{"2147483647ms", MaxTimeout, false},
		{"2147483648", MaxTimeout, true},
		{"25d", MaxTimeout, true},
		{"99999999999999999999999999h", MaxTimeout, true},
		{"1000h", MaxTimeout, true},
		{"9999999999h", MaxTimeout, true}, // beyond time.Duration
	} {
		got, clamped, err := ParseTimeout(c.in)
		if err != nil || got != c.want || clamped != c.clamped {
			t.Errorf("ParseTimeout(%q) = %v, %v, %v; want %v, %v, nil", c.in, got, clamped, err, c.want, c.clamped)
		}
	}
	for _, in := range []string{"", "s", "-1s", "-5", "1.5", "10 s", "1w", "ten", "1s ", "0x10", strings.Repeat("1", 65)} {
		_, _, err := ParseTimeout(in)
		if err == nil || !strings.Contains(err.Error(), "accepted") {
			t.Errorf("ParseTimeout(%q) error = %v, want one stating the accepted form", in, err)
		}
	}
}

// FuzzParseTimeout checks that any input either fails with the accepted
// form named, or gives a duration in [0, MaxTimeout], clamped only at the
// maximum, that HAProxy's millisecond form reads back the same.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"0", "1500", "10s", "1m30s", "2147483648", "25d", "-1s", "1.5", "µs", "1e9s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, clamped, err := ParseTimeout(s)
		if err != nil {
			if !strings.Contains(err.Error(), "accepted") {
				t.Fatalf("ParseTimeout(%q) error %q does not state the accepted form", s, err)
			}
			if d != 0 || clamped {
				t.Fatalf("ParseTimeout(%q) = %v, %v with an error", s, d, clamped)
			}
			return
		}
		if d < 0 || d > MaxTimeout {
			t.Fatalf("ParseTimeout(%q) = %v, outside [0, %v]", s, d, MaxTimeout)
		}
		if clamped && d != MaxTimeout {
			t.Fatalf("ParseTimeout(%q) clamped to %v, not to the maximum", s, d)
		}
		if d%time.Millisecond == 0 {
			ms := strconvMs(d)
			back, _, err := ParseTimeout(ms)
			if err != nil || back != d {
				t.Fatalf("ParseTimeout(%q) = %v, but %q reads back as %v, %v", s, d, ms, back, err)
			}
		}
	})
}

// strconvMs writes d in HAProxy's unitless form: whole milliseconds.
func strconvMs(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
