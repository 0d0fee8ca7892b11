package main

import (
	"slices"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"

	"github.com/gatewitness/gatewitness/reports"
)

// TestProfileResultsSayNotClaimed: the run's closing lines show a profile
// the run claimed nothing of and ran nothing of as not claimed, not as
// upstream's "success" of no tests.
func TestProfileResultsSayNotClaimed(t *testing.T) {
	run := &reports.Run{
		Conformance: &confv1.ConformanceReport{ProfileReports: []confv1.ProfileReport{
			{Name: "GATEWAY-HTTP", Core: confv1.Status{Result: confv1.Success, Statistics: confv1.Statistics{Passed: 3}}},
		}},
		GatewitnessProfiles: []confv1.ProfileReport{
			{Name: "GATEWITNESS-MESH-PROBES", Summary: "Core tests succeeded.", Core: confv1.Status{Result: confv1.Success}},
		},
	}
	want := []string{
		"GATEWAY-HTTP (upstream report): core success",
		"GATEWITNESS-MESH-PROBES (gatewitness report): not claimed, no test of it ran",
	}
	if got := profileResults(run); !slices.Equal(got, want) {
		t.Errorf("profileResults = %q, want %q", got, want)
	}
}
