package plugin_test

import (
	"os"
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"

	"github.com/gatewitness/gatewitness/conformance/plugin"
)

// TestRunConformanceWithOptionsWithGatewitness is the conformance test most
// implementers already have (upstream's DefaultOptions and
// RunConformanceWithOptions) with gatewitness's tests added: the two lines
// marked below. RunConformanceWithOptions runs tests.ConformanceTests and
// writes the report to --report-output, as usual.
//
// It runs against the cluster of the usual kubeconfig and takes
// upstream's flags, for example:
//
//	GATEWITNESS_CLUSTER_TEST=1 go test ./conformance/plugin -run TestRunConformanceWithOptionsWithGatewitness -timeout 60m \
//	    -args --gateway-class=gatewitness --report-output=/tmp/report.yaml \
//	    --organization=me --project=gw --url=https://example.com --version=v1.2.3 --contact=me@example.com
//
// Select it with -run: it appends to upstream's tests.ConformanceTests, as
// an implementer's test does, so run in one process after
// TestUpstreamRunnerWithGatewitness that test would see gatewitness's tests
// twice. Without GATEWITNESS_CLUSTER_TEST it skips.
func TestRunConformanceWithOptionsWithGatewitness(t *testing.T) {
	if os.Getenv("GATEWITNESS_CLUSTER_TEST") == "" {
		t.Skip("set GATEWITNESS_CLUSTER_TEST=1 to run upstream's RunConformanceWithOptions with gatewitness's tests against the cluster of your kubeconfig")
	}
	opts := conformance.DefaultOptions(t)

	// The two lines that add gatewitness:
	opts.ManifestFS = append(opts.ManifestFS, plugin.Manifests)
	tests.ConformanceTests = append(tests.ConformanceTests, plugin.ConformanceTests...)

	opts.ConformanceProfiles = append(opts.ConformanceProfiles, plugin.Profiles...) // optional: gatewitness's profiles in the report
	conformance.RunConformanceWithOptions(t, opts)
}
