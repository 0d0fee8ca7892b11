package dataplane

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseGRPCTimeout(t *testing.T) {
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
		"99999999H": math.MaxInt64, // about 11,400 years: capped
		"99999999M": 99999999 * time.Minute,
	}
	for in, want := range good {
		got, err := parseGRPCTimeout(in)
		if err != nil || got != want {
			t.Errorf("parseGRPCTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "S", "1", "1s", "1h", "1x", "123456789S", "-1S", "+1S", " 1S", "1.5S", "1e3m", "١S"} {
		if _, err := parseGRPCTimeout(in); err == nil || !strings.Contains(err.Error(), "grpc-timeout") || !strings.Contains(err.Error(), grpcTimeoutForm) {
			t.Errorf("parseGRPCTimeout(%q) error %v, want one naming grpc-timeout and the accepted form", in, err)
		}
	}
}

func TestClientTimeout(t *testing.T) {
	if _, ok, err := clientTimeout(http.Header{}); ok || err != nil {
		t.Errorf("no header: ok %v err %v, want false, nil", ok, err)
	}
	if d, ok, err := clientTimeout(http.Header{"Grpc-Timeout": {"250m"}}); !ok || err != nil || d != 250*time.Millisecond {
		t.Errorf("250m: %v %v %v", d, ok, err)
	}
	if _, _, err := clientTimeout(http.Header{"Grpc-Timeout": {"1S", "2S"}}); err == nil || !strings.Contains(err.Error(), "2 values") {
		t.Errorf("two values: error %v, want one saying so", err)
	}
}

// TestFormatGRPCTimeout: the encoded value is never larger than the input,
// fits the 8 digits the protocol allows, loses less than one unit, and
// reads back with parseGRPCTimeout.
func TestFormatGRPCTimeout(t *testing.T) {
	inputs := []time.Duration{1, 999, time.Microsecond, 99999999, 100000000, 1234567891,
		99999999 * time.Microsecond, 99999999*time.Microsecond + 1, 10 * time.Second, 100 * time.Second,
		27 * time.Hour, 28 * time.Hour, 5 * 365 * 24 * time.Hour, math.MaxInt64}
	for _, d := range inputs {
		s := formatGRPCTimeout(d)
		if digits := len(s) - 1; digits < 1 || digits > maxTimeoutDigits {
			t.Errorf("formatGRPCTimeout(%v) = %q: %d digits, want 1 to 8", d, s, digits)
		}
		back, err := parseGRPCTimeout(s)
		if err != nil {
			t.Errorf("formatGRPCTimeout(%v) = %q does not parse: %v", d, s, err)
			continue
		}
		var unit time.Duration
		for _, u := range timeoutUnits {
			if u.unit == s[len(s)-1] {
				unit = u.d
			}
		}
		if back > d || d-back >= unit {
			t.Errorf("formatGRPCTimeout(%v) = %q = %v; want at most the input and less than one %v below it", d, s, back, unit)
		}
	}
	// The finest unit that fits is chosen: microseconds for 10s.
	if got := formatGRPCTimeout(10*time.Second + 1500*time.Nanosecond); got != "10000001u" {
		t.Errorf("formatGRPCTimeout(10.0000015s) = %q, want 10000001u", got)
	}
}

func TestCallBudget(t *testing.T) {
	const route, short, long = 10 * time.Second, 3 * time.Second, 60 * time.Second
	allow := grpcLimits{maxStream: route}
	deny := grpcLimits{maxStream: route, strictDeny: true}
	none := grpcLimits{}
	noneDeny := grpcLimits{strictDeny: true}
	tests := []struct {
		name      string
		lim       grpcLimits
		client    time.Duration
		hasClient bool
		f         GRPCTimeoutFaults
		want      time.Duration
		src       budgetSource
	}{
		{"allow, client shorter", allow, short, true, GRPCTimeoutFaults{}, short, budgetClient},
		{"allow, client longer", allow, long, true, GRPCTimeoutFaults{}, route, budgetRoute},
		{"allow, client equal", allow, route, true, GRPCTimeoutFaults{}, route, budgetRoute},
		{"allow, no client", allow, 0, false, GRPCTimeoutFaults{}, route, budgetRoute},
		{"allow, client 0", allow, 0, true, GRPCTimeoutFaults{}, 0, budgetClient},
		{"deny, client longer", deny, long, true, GRPCTimeoutFaults{}, long, budgetClient},
		{"deny, client shorter", deny, short, true, GRPCTimeoutFaults{}, short, budgetClient},
		{"deny, no client", deny, 0, false, GRPCTimeoutFaults{}, route, budgetRoute},
		{"no limit, client", none, short, true, GRPCTimeoutFaults{}, short, budgetClient},
		{"no limit, no client", none, 0, false, GRPCTimeoutFaults{}, 0, budgetNone},
		{"no limit deny, no client", noneDeny, 0, false, GRPCTimeoutFaults{}, 0, budgetNone},
		{"fault: client ignored", allow, short, true, GRPCTimeoutFaults{IgnoreClientTimeout: true}, route, budgetRoute},
		{"fault: client ignored, no limit", none, short, true, GRPCTimeoutFaults{IgnoreClientTimeout: true}, 0, budgetNone},
		{"fault: looser wins, client shorter", allow, short, true, GRPCTimeoutFaults{LooserWins: true}, route, budgetRoute},
		{"fault: looser wins, client longer", allow, long, true, GRPCTimeoutFaults{LooserWins: true}, long, budgetClient},
	}
	for _, tc := range tests {
		got, src := callBudget(tc.lim, tc.client, tc.hasClient, tc.f)
		if got != tc.want || src != tc.src {
			t.Errorf("%s: callBudget = %v from %v, want %v from %v", tc.name, got, src, tc.want, tc.src)
		}
	}
}
