package plugin_test

import (
	"os"
	"slices"
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/conformance/plugin"
)

// TestUpstreamRunnerWithGatewitness is the conformance test of an
// implementer who builds upstream's suite (DefaultOptions,
// NewConformanceTestSuite, Setup, Run) with gatewitness's tests added: the
// two lines marked below, and an optional third for gatewitness's profiles.
// Those who call RunConformanceWithOptions instead: see
// example_withoptions_test.go.
//
// It runs against the cluster of the usual kubeconfig (--kubeconfig or
// $KUBECONFIG) and takes upstream's flags, for example, with the
// reference gateway (gatewitness gateway --kubeconfig ...) serving the
// class gatewitness:
//
//	GATEWITNESS_CLUSTER_TEST=1 go test ./conformance/plugin -run TestUpstreamRunnerWithGatewitness -timeout 60m \
//	    -args --gateway-class=gatewitness --report-output=/tmp/report.yaml \
//	    --organization=me --project=gw --url=https://example.com --version=v1.2.3 --contact=me@example.com
//
// Without GATEWITNESS_CLUSTER_TEST it skips, so `go test ./...` never
// touches the cluster a developer's default kubeconfig names.
func TestUpstreamRunnerWithGatewitness(t *testing.T) {
	if os.Getenv("GATEWITNESS_CLUSTER_TEST") == "" {
		t.Skip("set GATEWITNESS_CLUSTER_TEST=1 to run upstream's runner with gatewitness's tests against the cluster of your kubeconfig")
	}
	opts := conformance.DefaultOptions(t)

	// The two lines that add gatewitness:
	opts.ManifestFS = append(opts.ManifestFS, plugin.Manifests)
	all := append(slices.Clone(tests.ConformanceTests), plugin.ConformanceTests...)

	opts.ConformanceProfiles = append(opts.ConformanceProfiles, plugin.Profiles...) // optional: gatewitness's profiles in the report

	s, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatalf("creating the suite: %v", err)
	}
	if opts.ReportOutputPath != "" {
		t.Cleanup(func() { writeReport(t, s, opts.ReportOutputPath) })
	}
	s.Setup(t, all)
	if err := s.Run(t, all); err != nil {
		t.Fatal(err)
	}
}

// writeReport writes the suite's ConformanceReport as YAML to path, as
// upstream's RunConformanceWithOptions does.
func writeReport(t *testing.T, s *suite.ConformanceTestSuite, path string) {
	report, err := s.Report()
	if err != nil {
		t.Errorf("building the report: %v", err)
		return
	}
	data, err := yaml.Marshal(report)
	if err != nil {
		t.Errorf("encoding the report: %v", err)
		return
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Errorf("writing the report: %v", err)
	}
}
