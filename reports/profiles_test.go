package reports

import (
	"bytes"
	"strings"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// notClaimedRun is goldenRun with two more profiles of the shape
// upstream's suite gives a profile the run claims nothing of: the core a
// success of no tests, no extended results. One is upstream's, one
// gatewitness's.
func notClaimedRun() *Run {
	run := goldenRun()
	empty := func(name string) confv1.ProfileReport {
		return confv1.ProfileReport{Name: name, Summary: "Core tests succeeded.", Core: confv1.Status{Result: confv1.Success}}
	}
	run.Profiles = append(run.Profiles, "GATEWAY-GRPC", "GATEWITNESS-MESH-PROBES")
	run.Conformance.ProfileReports = append(run.Conformance.ProfileReports, empty("GATEWAY-GRPC"))
	run.GatewitnessProfiles = append(run.GatewitnessProfiles, empty("GATEWITNESS-MESH-PROBES"))
	return run
}

func TestProfileNotClaimed(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    confv1.ProfileReport
		want bool
	}{
		{"nothing counted", confv1.ProfileReport{Core: confv1.Status{Result: confv1.Success}}, true},
		{"an empty extended", confv1.ProfileReport{Extended: &confv1.ExtendedStatus{Status: confv1.Status{Result: confv1.Success}}}, true},
		{"a core test passed", confv1.ProfileReport{Core: confv1.Status{Result: confv1.Success, Statistics: confv1.Statistics{Passed: 1}}}, false},
		{"a core test skipped", confv1.ProfileReport{Core: confv1.Status{Result: confv1.Partial, Statistics: confv1.Statistics{Skipped: 1}}}, false},
		{"an extended test failed", confv1.ProfileReport{Extended: &confv1.ExtendedStatus{Status: confv1.Status{Statistics: confv1.Statistics{Failed: 1}}}}, false},
		{"an extended feature claimed", confv1.ProfileReport{Extended: &confv1.ExtendedStatus{SupportedFeatures: []string{"HTTPRouteRetry"}}}, false},
	} {
		if got := ProfileNotClaimed(tc.p); got != tc.want {
			t.Errorf("%s: ProfileNotClaimed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNotClaimedProfilesAreNotSuccesses: a profile the run claims nothing
// of and ran nothing of is "not claimed" in the summaries and the
// gatewitness report (its summary and its core result), not a success of
// 0 tests; the upstream report keeps it as upstream's runner writes it.
func TestNotClaimedProfilesAreNotSuccesses(t *testing.T) {
	run := notClaimedRun()
	var long, short, gw, up bytes.Buffer
	if err := WriteMarkdown(&long, run); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdownShort(&short, run); err != nil {
		t.Fatal(err)
	}
	if err := WriteGatewitnessYAML(&gw, run); err != nil {
		t.Fatal(err)
	}
	if err := WriteConformanceYAML(&up, run.Conformance); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, text, want string }{
		{"summary.md", long.String(), "| GATEWAY-GRPC | upstream | not claimed: no test of it ran | - | - |"},
		{"summary.md", long.String(), "| GATEWITNESS-MESH-PROBES | gatewitness | not claimed: no test of it ran | - | - |"},
		{"summary-short.md", short.String(), "| GATEWITNESS-MESH-PROBES | not claimed | - |"},
		{"summary-short.md", short.String(), "| GATEWAY-GRPC | not claimed | - |"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.file, c.want, c.text)
		}
		for _, line := range strings.Split(c.text, "\n") {
			if (strings.Contains(line, "GATEWAY-GRPC") || strings.Contains(line, "MESH-PROBES")) && strings.Contains(line, "success") {
				t.Errorf("%s shows a profile it claims nothing of as a success: %q", c.file, line)
			}
		}
	}
	var report GatewitnessReport
	if err := yaml.Unmarshal(gw.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	for _, p := range report.ProfileReports {
		if p.Name == "GATEWITNESS-MESH-PROBES" && (p.Summary != NotClaimedSummary || p.Core.Result != NotClaimedResult) {
			t.Errorf("gatewitness report: %s summary %q, core result %q; want %q, %q", p.Name, p.Summary, p.Core.Result, NotClaimedSummary, NotClaimedResult)
		}
		if p.Name != "GATEWITNESS-MESH-PROBES" && p.Summary == NotClaimedSummary {
			t.Errorf("gatewitness report: %s, which ran tests, is not claimed", p.Name)
		}
	}
	var upstream confv1.ConformanceReport
	if err := yaml.Unmarshal(up.Bytes(), &upstream); err != nil {
		t.Fatal(err)
	}
	for _, p := range upstream.ProfileReports {
		if p.Name == "GATEWAY-GRPC" && (p.Summary != "Core tests succeeded." || p.Core.Result != confv1.Success) {
			t.Errorf("upstream report: %s changed from what upstream's runner writes: %+v", p.Name, p)
		}
	}
}
