package plugin_test

import (
	"os"
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"

	"github.com/gatecheck/gatecheck/conformance/plugin"
)

// TestRunConformanceWithOptionsWithGatecheck is the conformance test most
// implementers already have (upstream's DefaultOptions and
// RunConformanceWithOptions) with gatecheck's tests added: the two lines
// marked below. RunConformanceWithOptions runs tests.ConformanceTests and
// writes the report to --report-output, as usual.
//
// It runs against the cluster of the usual kubeconfig and takes
// upstream's flags, for example:
//
//	GATECHECK_CLUSTER_TEST=1 go test ./conformance/plugin -run TestRunConformanceWithOptionsWithGatecheck -timeout 60m \
//	    -args --gateway-class=gatecheck --report-output=/tmp/report.yaml \
//	    --organization=me --project=gw --url=https://example.com --version=v1.2.3 --contact=me@example.com
//
// Select it with -run: it appends to upstream's tests.ConformanceTests, as
// an implementer's test does, so run in one process after
// TestUpstreamRunnerWithGatecheck that test would see gatecheck's tests
// twice. Without GATECHECK_CLUSTER_TEST it skips.
func TestRunConformanceWithOptionsWithGatecheck(t *testing.T) {
	if os.Getenv("GATECHECK_CLUSTER_TEST") == "" {
		t.Skip("set GATECHECK_CLUSTER_TEST=1 to run upstream's RunConformanceWithOptions with gatecheck's tests against the cluster of your kubeconfig")
	}
	opts := conformance.DefaultOptions(t)

	// The two lines that add gatecheck:
	opts.ManifestFS = append(opts.ManifestFS, plugin.Manifests)
	tests.ConformanceTests = append(tests.ConformanceTests, plugin.ConformanceTests...)

	opts.ConformanceProfiles = append(opts.ConformanceProfiles, plugin.Profiles...) // optional: gatecheck's profiles in the report
	conformance.RunConformanceWithOptions(t, opts)
}
