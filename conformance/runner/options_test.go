package runner_test

import (
	"flag"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	upstream "sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/runner"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

// parse parses args as the CLI does.
func parse(args ...string) (runner.Options, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	build := runner.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return runner.Options{}, err
	}
	return build()
}

func TestFlagDefaults(t *testing.T) {
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if o.GatewayClassName != "gateway-conformance" || o.Mode != "default" || !o.CleanupBaseResources || !o.CleanupTestResources {
		t.Errorf("defaults = class %q, mode %q, cleanup %v/%v; want upstream's gateway-conformance, default, true/true",
			o.GatewayClassName, o.Mode, o.CleanupBaseResources, o.CleanupTestResources)
	}
	if want := runner.DefaultTimeoutConfig(); o.TimeoutConfig != want {
		t.Errorf("TimeoutConfig = %+v, want upstream's defaults with RequiredConsecutiveSuccesses unset: %+v", o.TimeoutConfig, want)
	}
	if o.TimingTolerance != gctests.DefaultTimingTolerance || o.Kubeconfig != "" || o.ReportDir != "" {
		t.Errorf("gatewitness defaults = %v %q %q", o.TimingTolerance, o.Kubeconfig, o.ReportDir)
	}
	if o.RetryBudgetLoad != (gctests.RetryBudgetLoad{QPS: 40, Requests: 240, ShareSlack: 0.05}) {
		t.Errorf("RetryBudgetLoad = %+v; want 240 requests at 40/s, slack 0.05", o.RetryBudgetLoad)
	}
}

func TestFlagsApply(t *testing.T) {
	o, err := parse(
		"--gateway-class", "acme",
		"--supported-features", "Gateway, HTTPRoute,HTTPRouteRetryCodes",
		"--exempt-features", "HTTPRouteCORS",
		"--all-features",
		"--conformance-profiles", "GATEWAY-HTTP,GATEWITNESS-HTTP-RESILIENCE",
		"--skip-tests", "HTTPRouteSimpleSameNamespace",
		"--run-test", "HTTPRouteTimeoutRequest",
		"--mode", "gateway-mode",
		"--namespace-labels", "team=gw,example.com/env=ci",
		"--namespace-annotations", "example.com/note=any value",
		"--organization", "acme", "--project", "gw", "--url", "https://acme.example/gw",
		"--version", "v1.2.3", "--contact", "@alice,@bob",
		"--usable-address", "192.0.2.10", "--unusable-address", "gw.example.com",
		"--timeout-config-overrides", "CreateTimeout:120; MaxTimeToConsistency:45s;RequiredConsecutiveSuccesses:5",
		"--kubeconfig", "/tmp/kc", "--report-dir", "out", "--timing-tolerance", "2s",
		"--report-folder", "envoy-gateway", "--echo-image", "registry.example.com/gw/echo-backend:v0.1.0",
		"--debug", "--cleanup-base-resources=false", "--cleanup-test-resources=false",
		"--allow-crds-mismatch", "--skip-provisional-tests", "--disable-parallel-tests", "--fail-fast",
		"--report-output", "r.yaml", "--mesh-name", "mesh",
		"--retry-budget-load-qps", "20", "--retry-budget-load-requests", "120", "--retry-budget-share-slack", "0.1",
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []features.FeatureName{"Gateway", "HTTPRoute", "HTTPRouteRetryCodes"}
	checks := []struct {
		name string
		ok   bool
	}{
		{"gateway-class", o.GatewayClassName == "acme"},
		{"supported-features", slices.Equal(o.SupportedFeatures, want)},
		{"exempt-features", slices.Equal(o.ExemptFeatures, []features.FeatureName{"HTTPRouteCORS"})},
		{"all-features", o.EnableAllSupportedFeatures},
		{"conformance-profiles", slices.Equal(o.ConformanceProfiles, []suite.ConformanceProfileName{"GATEWAY-HTTP", "GATEWITNESS-HTTP-RESILIENCE"})},
		{"skip-tests", slices.Equal(o.SkipTests, []string{"HTTPRouteSimpleSameNamespace"})},
		{"run-test", o.RunTest == "HTTPRouteTimeoutRequest"},
		{"mode", o.Mode == "gateway-mode"},
		{"namespace-labels", o.NamespaceLabels["team"] == "gw" && o.NamespaceLabels["example.com/env"] == "ci" && len(o.NamespaceLabels) == 2},
		{"namespace-annotations", o.NamespaceAnnotations["example.com/note"] == "any value"},
		{"implementation", o.Implementation.Organization == "acme" && o.Implementation.Project == "gw" &&
			o.Implementation.URL == "https://acme.example/gw" && o.Implementation.Version == "v1.2.3" &&
			slices.Equal(o.Implementation.Contact, []string{"@alice", "@bob"})},
		{"usable-address", len(o.UsableNetworkAddresses) == 1 && *o.UsableNetworkAddresses[0].Type == gwv1.IPAddressType},
		{"unusable-address", len(o.UnusableNetworkAddresses) == 1 && *o.UnusableNetworkAddresses[0].Type == gwv1.HostnameAddressType},
		{"timeout-config-overrides", o.TimeoutConfig.CreateTimeout == 120*time.Second &&
			o.TimeoutConfig.MaxTimeToConsistency == 45*time.Second && o.TimeoutConfig.RequiredConsecutiveSuccesses == 5 &&
			o.TimeoutConfig.GetTimeout == config.DefaultTimeoutConfig().GetTimeout},
		{"kubeconfig", o.Kubeconfig == "/tmp/kc"},
		{"report-dir", o.ReportDir == "out"},
		{"report-folder", o.ReportFolder == "envoy-gateway"},
		{"echo-image", o.EchoImage == "registry.example.com/gw/echo-backend:v0.1.0"},
		{"report-output", o.ReportOutputPath == "r.yaml"},
		{"mesh-name", o.MeshName == "mesh"},
		{"timing-tolerance", o.TimingTolerance == 2*time.Second},
		{"retry-budget-load-*", o.RetryBudgetLoad == gctests.RetryBudgetLoad{QPS: 20, Requests: 120, ShareSlack: 0.1}},
		{"booleans", o.Debug && !o.CleanupBaseResources && !o.CleanupTestResources && o.AllowCRDsMismatch &&
			o.SkipProvisionalTests && o.DisableParallelTests && o.FailFast},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("--%s was not applied: %+v", c.name, o)
		}
	}
}

func TestBadFlagsNameTheFlagAndTheForm(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--supported-features", "Gateway,Teleport"}, []string{"flag --supported-features", `unknown feature "Teleport"`, "gatewitness features"}},
		{[]string{"--supported-features", "HTTPRouteRetryCode"}, []string{"flag --supported-features", "did you mean HTTPRouteRetryCodes?"}},
		{[]string{"--exempt-features", "httproutecors"}, []string{"flag --exempt-features", "did you mean HTTPRouteCORS?"}},
		{[]string{"--conformance-profiles", "GATEWAY-HTTTP"}, []string{"flag --conformance-profiles", "did you mean GATEWAY-HTTP?"}},
		{[]string{"--conformance-profiles", "GATEWITNESS-MESH-PROBE"}, []string{"did you mean GATEWITNESS-MESH-PROBES?"}},
		{[]string{"--run-test", "HTTPRouteSimpleSameNamspace"}, []string{"flag --run-test", "did you mean HTTPRouteSimpleSameNamespace?"}},
		{[]string{"--skip-tests", "ConnectionTunelTimeout"}, []string{"flag --skip-tests", "did you mean ConnectionTunnelTimeout?"}},
		{[]string{"--supported-features", "Gateway,,HTTPRoute"}, []string{"flag --supported-features", "empty element"}},
		{[]string{"--exempt-features", "nope"}, []string{"flag --exempt-features", `unknown feature "nope"`}},
		{[]string{"--conformance-profiles", "GATEWAY-FTP"}, []string{"flag --conformance-profiles", `unknown conformance profile "GATEWAY-FTP"`, "GATEWAY-HTTP"}},
		{[]string{"--skip-tests", "NoSuchTest"}, []string{"flag --skip-tests", `"NoSuchTest"`, "gatewitness tests"}},
		{[]string{"--run-test", "NoSuchTest"}, []string{"flag --run-test", `"NoSuchTest"`}},
		{[]string{"--run-test", "HTTPRouteSimpleSameNamespace,HTTPRouteRetryBodyReplai"}, []string{"flag --run-test", `"HTTPRouteRetryBodyReplai"`, "did you mean HTTPRouteRetryBodyReplay?"}},
		{[]string{"--run-test", "HTTPRouteSimpleSameNamespace,,HTTPRouteRetryBodyReplay"}, []string{"flag --run-test", "empty element", "HTTPRouteSimpleSameNamespace,HTTPRouteRetryBodyReplay"}},
		{[]string{"--run-test", "HTTPRouteRetryBodyReplay,HTTPRouteRetryBodyReplay"}, []string{"flag --run-test", "names HTTPRouteRetryBodyReplay twice"}},
		{[]string{"--mode", "a/b"}, []string{"flag --mode", `has '/'`, "letters, digits"}},
		{[]string{"--mode", ""}, []string{"flag --mode", "empty"}},
		{[]string{"--version", "1 2"}, []string{"flag --version", `has ' '`}},
		{[]string{"--url", "acme.example"}, []string{"flag --url", "not an absolute http or https URL"}},
		{[]string{"--gateway-class", "Not_A_Name"}, []string{"flag --gateway-class", "not a Kubernetes object name"}},
		{[]string{"--namespace-labels", "team"}, []string{"flag --namespace-labels", `"team" has no '='`, "name=value"}},
		{[]string{"--namespace-labels", "team=a b"}, []string{"flag --namespace-labels", `value "a b"`}},
		{[]string{"--namespace-annotations", "bad key=x"}, []string{"flag --namespace-annotations", `key "bad key"`}},
		{[]string{"--report-folder", "Envoy_Gateway"}, []string{"flag --report-folder", "lower-case letters, digits"}},
		{[]string{"--echo-image", "gatewitness/echo-basic:v1"}, []string{"flag --echo-image", "ends in /echo-backend"}},
		{[]string{"--contact", "a,,b"}, []string{"flag --contact", "empty element"}},
		{[]string{"--usable-address", "not an address"}, []string{"flag --usable-address", "neither an IP address nor a hostname"}},
		{[]string{"--timeout-config-overrides", "CreateTimeout=10"}, []string{"flag --timeout-config-overrides", "not Name:value", "CreateTimeout:120"}},
		{[]string{"--timeout-config-overrides", "Coffee:10"}, []string{"flag --timeout-config-overrides", `"Coffee" is not a timeout`}},
		{[]string{"--timeout-config-overrides", "CreateTimeout:soon"}, []string{"flag --timeout-config-overrides", "CreateTimeout", "neither whole seconds nor a Go duration"}},
		{[]string{"--timeout-config-overrides", "CreateTimeout:-5"}, []string{"flag --timeout-config-overrides", "out of range"}},
		{[]string{"--timeout-config-overrides", "RequiredConsecutiveSuccesses:0"}, []string{"flag --timeout-config-overrides", "not a count from 1 to 1000"}},
		{[]string{"--timing-tolerance", "fast"}, []string{"flag --timing-tolerance", `"fast"`, "from 500ms to 2s"}},
		{[]string{"--timing-tolerance", "0s"}, []string{"flag --timing-tolerance", "out of range", "from 500ms to 2s"}},
		{[]string{"--timing-tolerance", "100ms"}, []string{"flag --timing-tolerance", "out of range", "from 500ms to 2s"}},
		{[]string{"--timing-tolerance", "2h"}, []string{"flag --timing-tolerance", "out of range", "from 500ms to 2s"}},
		{[]string{"--retry-budget-load-qps", "fast"}, []string{"flag --retry-budget-load-qps", `"fast" is not a whole number`, "from 20 to 400"}},
		{[]string{"--retry-budget-load-qps", "10"}, []string{"flag --retry-budget-load-qps", "qps 10 is out of range", "from 20 to 400"}},
		{[]string{"--retry-budget-load-qps", "1000"}, []string{"flag --retry-budget-load-qps", "out of range", "from 20 to 400"}},
		{[]string{"--retry-budget-load-requests", "many"}, []string{"flag --retry-budget-load-requests", `"many" is not a whole number`, "from 120 to 100000"}},
		{[]string{"--retry-budget-load-requests", "10"}, []string{"flag --retry-budget-load-requests", "requests 10 is out of range", "from 120 to 100000"}},
		{[]string{"--retry-budget-load-requests", "1000000"}, []string{"flag --retry-budget-load-requests", "out of range"}},
		// Fewer than six budget intervals at the default 40/s, and too
		// few or too many at a rate given in the same command.
		{[]string{"--retry-budget-load-requests", "200"}, []string{"flag --retry-budget-load-requests", "at 40 a second", "from 240 to 12000"}},
		{[]string{"--retry-budget-load-qps", "100"}, []string{"flag --retry-budget-load-requests", "requests 240 is out of range at 100 a second", "from 600 to 30000"}},
		{[]string{"--retry-budget-load-qps", "20", "--retry-budget-load-requests", "7000"}, []string{"flag --retry-budget-load-requests", "from 120 to 6000", "5m0s of load"}},
		{[]string{"--retry-budget-share-slack", "lots"}, []string{"flag --retry-budget-share-slack", `"lots" is not a number`, "from 0 to 0.1"}},
		{[]string{"--retry-budget-share-slack", "-0.01"}, []string{"flag --retry-budget-share-slack", "out of range", "from 0 to 0.1"}},
		{[]string{"--retry-budget-share-slack", "0.5"}, []string{"flag --retry-budget-share-slack", "out of range", "from 0 to 0.1"}},
		{[]string{"--retry-budget-share-slack", "NaN"}, []string{"flag --retry-budget-share-slack", "out of range"}},
		{[]string{"--debug=maybe"}, []string{"-debug", "invalid boolean"}},
	}
	for _, tt := range tests {
		_, err := parse(tt.args...)
		if err == nil {
			t.Errorf("%q: no error", tt.args)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not contain %q", tt.args, err, w)
			}
		}
	}
}

func TestReferenceFeatures(t *testing.T) {
	fs := runner.ReferenceFeatures()
	if !slices.IsSorted(fs) || len(slices.Compact(slices.Clone(fs))) != len(fs) {
		t.Errorf("ReferenceFeatures() = %v, want sorted and without duplicates", fs)
	}
	for _, f := range fs {
		if _, ok := features.Lookup(f); !ok {
			t.Errorf("%s is not a registered feature", f)
		}
	}
	for _, core := range []features.FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute, gwfeatures.SupportGRPCRoute, gwfeatures.SupportReferenceGrant} {
		if !slices.Contains(fs, core) {
			t.Errorf("ReferenceFeatures() lacks the core feature %s", core)
		}
	}
	for _, f := range []features.FeatureName{gwfeatures.SupportMesh, gwfeatures.SupportTLSRoute, gwfeatures.SupportUDPRoute} {
		if slices.Contains(fs, f) {
			t.Errorf("ReferenceFeatures() claims %s, which the reference gateway does not implement", f)
		}
	}
}

func TestAllTests(t *testing.T) {
	all := runner.AllTests()
	if want := len(upstream.ConformanceTests) + len(gctests.ConformanceTests); len(all) != want {
		t.Fatalf("AllTests() has %d tests, want upstream's plus gatewitness's, %d", len(all), want)
	}
	if all[0].ShortName != upstream.ConformanceTests[0].ShortName {
		t.Errorf("AllTests() does not start with upstream's tests")
	}
}

func TestRunRejectsBadOptionsBeforeStarting(t *testing.T) {
	o := runner.DefaultOptions()
	o.SupportedFeatures = []features.FeatureName{"Teleport"}
	if _, err := runner.Run(t, o); err == nil || !strings.Contains(err.Error(), "supportedFeatures") {
		t.Errorf("Run with an unknown feature: %v", err)
	}
	o = runner.DefaultOptions()
	o.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	if _, err := runner.Run(t, o); err == nil || !strings.Contains(err.Error(), "kubeconfig="+o.Kubeconfig) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Run with a missing kubeconfig: %v", err)
	}
	o.KubeconfigSource = "KUBECONFIG"
	if _, err := runner.Run(t, o); err == nil || !strings.Contains(err.Error(), "KUBECONFIG="+o.Kubeconfig) || !strings.Contains(err.Error(), "--in-process") {
		t.Errorf("Run with KUBECONFIG naming a missing file: %v", err)
	}
	o = runner.DefaultOptions()
	o.Implementation.Organization = "acme"
	if _, err := runner.Run(t, o); err == nil || !strings.Contains(err.Error(), "implementation.organization") || !strings.Contains(err.Error(), "in-process") {
		t.Errorf("Run in-process with an implementation: %v, want a refusal saying why", err)
	}
	o = runner.DefaultOptions()
	o.Kubeconfig = filepath.Join(t.TempDir(), "kc")
	o.ReportDir = t.TempDir()
	if _, err := runner.Run(t, o); err == nil || !strings.Contains(err.Error(), "--organization") {
		t.Errorf("Run against a cluster with a report but no implementation details: %v", err)
	}
}

// TestEveryUpstreamFlagIsAccepted fails when upstream's suite has a flag
// that `gatewitness run` lacks, or one whose default differs. Upstream's
// flags are those its conformance/utils/flags package registers on
// flag.CommandLine, with controller-runtime's --kubeconfig, which
// upstream's runner reads too (this test binary's other flags are
// testing's "test.*").
func TestEveryUpstreamFlagIsAccepted(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	runner.RegisterFlags(fs)
	var upstreamNames []string
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "test.") {
			return
		}
		upstreamNames = append(upstreamNames, f.Name)
		ours := fs.Lookup(f.Name)
		switch {
		case ours == nil:
			t.Errorf("upstream's suite has the flag --%s (%s); gatewitness run does not accept it", f.Name, f.Usage)
		case ours.DefValue != f.DefValue:
			t.Errorf("--%s: default %q, upstream's is %q", f.Name, ours.DefValue, f.DefValue)
		case f.Name == "kubeconfig":
			// controller-runtime's flag, which upstream's runner reads
			// through config.GetConfig; gatewitness's says more.
		case !strings.Contains(ours.Usage, strings.TrimSuffix(f.Usage, ".")):
			t.Errorf("--%s: help %q does not give upstream's %q", f.Name, ours.Usage, f.Usage)
		}
	})
	for _, name := range []string{"gateway-class", "supported-features", "conformance-profiles", "report-output", "conformance-options-file"} {
		if !slices.Contains(upstreamNames, name) {
			t.Errorf("upstream's flag --%s is not registered: the flags package was not linked in", name)
		}
	}
}

// TestTargetSelection: --kubeconfig, else $KUBECONFIG, selects a cluster;
// --in-process, or nothing, selects the in-process reference gateway.
func TestTargetSelection(t *testing.T) {
	t.Setenv("KUBECONFIG", "/env/kubeconfig")
	tests := []struct {
		args           []string
		kubeconfig     string
		source         string
		context, error string
	}{
		{args: nil, kubeconfig: "/env/kubeconfig", source: "KUBECONFIG"},
		{args: []string{"--kubeconfig", "/flag/kc"}, kubeconfig: "/flag/kc", source: "--kubeconfig"},
		{args: []string{"--context", "kind-x"}, kubeconfig: "/env/kubeconfig", source: "KUBECONFIG", context: "kind-x"},
		{args: []string{"--in-process"}},
		{args: []string{"--in-process", "--kubeconfig", "/flag/kc"}, error: "--in-process and --kubeconfig name two targets"},
		{args: []string{"--in-process", "--context", "kind-x"}, error: "--context selects a kubeconfig context"},
		{args: []string{"--in-process", "--organization", "acme", "--version", "v1.0.0"}, error: "--organization, --version: these name the implementation under test, but this run is in-process"},
		{args: []string{"--organization", "acme"}, kubeconfig: "/env/kubeconfig", source: "KUBECONFIG"},
	}
	for _, tt := range tests {
		o, err := parse(tt.args...)
		if tt.error != "" {
			if err == nil || !strings.Contains(err.Error(), tt.error) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.error)
			}
			continue
		}
		if err != nil || o.Kubeconfig != tt.kubeconfig || o.KubeconfigSource != tt.source || o.Context != tt.context {
			t.Errorf("%q: kubeconfig %q from %q, context %q, err %v; want %q from %q, context %q",
				tt.args, o.Kubeconfig, o.KubeconfigSource, o.Context, err, tt.kubeconfig, tt.source, tt.context)
		}
	}
	t.Setenv("KUBECONFIG", "")
	if o, err := parse(); err != nil || o.Kubeconfig != "" {
		t.Errorf("no flag and no KUBECONFIG: kubeconfig %q, err %v; want in-process", o.Kubeconfig, err)
	}
	if _, err := parse("--context", "kind-x"); err == nil || !strings.Contains(err.Error(), "--context needs a kubeconfig") {
		t.Errorf("--context alone: %v", err)
	}
	if _, err := parse("--organization", "acme"); err == nil || !strings.Contains(err.Error(), "in-process") {
		t.Errorf("--organization with no cluster: %v, want a refusal", err)
	}
}

// TestRunTestTakesAList: --run-test takes one name, as upstream's flag
// does, or a comma-separated list; Validate accepts the same.
func TestRunTestTakesAList(t *testing.T) {
	for _, v := range []string{"HTTPRouteSimpleSameNamespace", "HTTPRouteSimpleSameNamespace, HTTPRouteRetryBodyReplay"} {
		o, err := parse("--run-test", v)
		if err != nil {
			t.Fatalf("--run-test %q: %v", v, err)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("--run-test %q: Validate: %v", v, err)
		}
	}
	o := runner.DefaultOptions()
	o.RunTest = "HTTPRouteSimpleSameNamespace,NoSuchTest"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `runTest: no test has the ShortName "NoSuchTest"`) {
		t.Errorf("Validate = %v, want the options-file key and the unknown name", err)
	}
}

// TestDefaultRequiredConsecutiveSuccesses checks that the flags leave
// upstream's RequiredConsecutiveSuccesses unset for the run to choose, and
// that --timeout-config-overrides sets it.
func TestDefaultRequiredConsecutiveSuccesses(t *testing.T) {
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if got := o.TimeoutConfig.RequiredConsecutiveSuccesses; got != 0 {
		t.Errorf("default RequiredConsecutiveSuccesses %d; want 0, set by the run", got)
	}
	o, err = parse("--timeout-config-overrides", "RequiredConsecutiveSuccesses:3")
	if err != nil {
		t.Fatal(err)
	}
	if got := o.TimeoutConfig.RequiredConsecutiveSuccesses; got != 3 {
		t.Errorf("after --timeout-config-overrides RequiredConsecutiveSuccesses:3: %d", got)
	}
}
