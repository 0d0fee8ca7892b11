package reports

import (
	"strings"
	"testing"
)

// TestTargetNamesItsDataPlane: an in-process run whose Gateways a real
// proxy served says so, and does not claim the reference gateway served.
func TestTargetNamesItsDataPlane(t *testing.T) {
	if got := (Target{InProcess: true}).String(); !strings.Contains(got, "the reference gateway") {
		t.Errorf("reference run: %q; want it to name the reference gateway", got)
	}
	got := (Target{InProcess: true, DataPlane: "haproxy"}).String()
	if !strings.Contains(got, "haproxy serving the Gateways") || strings.Contains(got, "reference gateway") {
		t.Errorf("haproxy run: %q; want haproxy named as what served, not the reference gateway", got)
	}
}
