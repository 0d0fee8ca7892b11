package runner_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/config"
	upstreamflags "sigs.k8s.io/gateway-api/conformance/utils/flags"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/conformance/runner"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

func TestOptionsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "opts.yaml")
	file := `
gatewayClassName: from-file
supportedFeatures: [Gateway, HTTPRoute]
conformanceProfiles: [GATEWAY-HTTP]
mode: file-mode
implementation:
  organization: acme
  version: v9
timeoutConfig:
  createTimeout: 90s
kubeconfig: /etc/kc
reportDir: reports
reportFolder: kgateway
echoImage: gatewitness/echo-backend:v0.1.0
timingTolerance: 1500ms
retryBudgetLoad:
  qps: 30
`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parse("--options-file", path, "--mode", "flag-mode")
	if err != nil {
		t.Fatal(err)
	}
	if o.GatewayClassName != "from-file" || o.Mode != "flag-mode" || o.Implementation.Organization != "acme" ||
		o.Kubeconfig != "/etc/kc" || o.ReportDir != "reports" || o.ReportFolder != "kgateway" || o.EchoImage != "gatewitness/echo-backend:v0.1.0" || o.TimingTolerance != 1500*time.Millisecond ||
		!slices.Equal(o.SupportedFeatures, []features.FeatureName{"Gateway", "HTTPRoute"}) {
		t.Errorf("options from the file, --mode from the flag: got %+v", o)
	}
	if o.TimeoutConfig.CreateTimeout != 90*time.Second || o.TimeoutConfig.GetTimeout != config.DefaultTimeoutConfig().GetTimeout {
		t.Errorf("timeoutConfig: CreateTimeout %v (want 90s), GetTimeout %v (want the default)", o.TimeoutConfig.CreateTimeout, o.TimeoutConfig.GetTimeout)
	}
	if !o.CleanupBaseResources {
		t.Error("a key absent from the file changed its default")
	}
	if o.RetryBudgetLoad != (gctests.RetryBudgetLoad{QPS: 30, Requests: 240, ShareSlack: 0.05}) {
		t.Errorf("retryBudgetLoad: %+v; want qps 30 from the file, the default requests and slack", o.RetryBudgetLoad)
	}
	// Upstream's name for the flag works too.
	if o, err := parse("--conformance-options-file", path); err != nil || o.Mode != "file-mode" {
		t.Errorf("--conformance-options-file: mode %q, err %v", o.Mode, err)
	}

	bad := []struct{ content, want string }{
		{"supportedFeatures: [Teleport]\n", `supportedFeatures: unknown feature "Teleport"`},
		{"timingTolerance: soon\n", "timingTolerance"},
		{"mode: a/b\n", "mode: "},
		{"retryBudgetLoad:\n  shareSlack: 0.3\n", "retryBudgetLoad: retry-budget share slack 0.3 is out of range"},
		{"retryBudgetLoad:\n  qps: 400\n", "retryBudgetLoad: retry-budget load requests 240 is out of range at 400 a second"},
		{"timeoutConfig:\n  createTimeout: soon\n", "createTimeout"},
		{"skipTests: [NoSuchTest]\n", "skipTests"},
		{"[not, a, map]\n", "opts.yaml"},
	}
	for _, b := range bad {
		if err := os.WriteFile(path, []byte(b.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := parse("--options-file", path)
		if err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "options file") {
			t.Errorf("file %q: error %v, want one naming the options file and %q", b.content, err, b.want)
		}
	}
	// Keys no one knows are ignored, as upstream's suite ignores them, with
	// a warning naming each.
	unknown := "gatewayClassNme: x\nimplementation:\n  orgnization: acme\ntimeoutConfig:\n  createTimeout: 5s\n  teaTimeout: 1s\nusableNetworkAddresses:\n- {type: IPAddress, value: 192.0.2.1, port: 80}\n"
	if err := os.WriteFile(path, []byte(unknown), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err = parse("--options-file", path)
	if err != nil {
		t.Fatalf("an options file with unknown keys: %v; want them ignored with a warning", err)
	}
	warnings := strings.Join(o.Warnings, "\n")
	for _, want := range []string{
		"unknown key gatewayClassNme ignored, as upstream's suite ignores it; did you mean gatewayClassName?",
		"unknown key implementation.orgnization ignored, as upstream's suite ignores it; did you mean organization?",
		"unknown key timeoutConfig.teaTimeout ignored",
		"unknown key usableNetworkAddresses[0].port ignored",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	if len(o.Warnings) != 4 || o.TimeoutConfig.CreateTimeout != 5*time.Second || o.GatewayClassName != "gateway-conformance" {
		t.Errorf("%d warnings (want 4), createTimeout %v, class %q: the known keys must still be read", len(o.Warnings), o.TimeoutConfig.CreateTimeout, o.GatewayClassName)
	}

	if _, err := parse("--options-file", filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing options file: error %v", err)
	}
	big := make([]byte, 2<<20)
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parse("--options-file", path); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized options file: error %v, want a size error", err)
	}
}

// TestOptionsFileReadAsUpstreamReadsIt: an upstream options file gives the
// same ConfigurableOptions as upstream's suite reads from it (defaults from
// its flags package, then yaml.Unmarshal, as its DefaultOptions does).
func TestOptionsFileReadAsUpstreamReadsIt(t *testing.T) {
	file := `
gatewayClassName: acme
supportedFeatures: [Gateway, HTTPRoute, HTTPRouteRequestTimeout]
exemptFeatures: [HTTPRouteCORS]
conformanceProfiles: [GATEWAY-HTTP]
cleanupBaseResources: false
namespaceLabels: {istio-injection: enabled}
skipTests: [HTTPRouteSimpleSameNamespace]
mode: with-the-lot
allowCrdsMismatch: true
implementation: {organization: acme, project: gw, url: "https://acme.example", version: v1.2.3, contact: ["@acme"]}
timeoutConfig: {createTimeout: 2m, maxTimeToConsistency: 45s}
usableNetworkAddresses: [{type: IPAddress, value: 192.0.2.1}]
`
	path := filepath.Join(t.TempDir(), "upstream.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	theirs := suite.ConfigurableOptions{
		CleanupBaseResources: upstreamflags.DefaultCleanupBaseResources,
		CleanupTestResources: upstreamflags.DefaultCleanupTestResources,
		GatewayClassName:     upstreamflags.DefaultGatewayClassName,
		Mode:                 upstreamflags.DefaultMode,
		// Upstream's defaults but RequiredConsecutiveSuccesses, which the
		// run sets when the file does not.
		TimeoutConfig: runner.DefaultTimeoutConfig(),
	}
	if err := sigsyaml.Unmarshal([]byte(file), &theirs); err != nil {
		t.Fatal(err)
	}
	ours := runner.DefaultOptions()
	ours.Kubeconfig = "/etc/kc" // a cluster run, so the implementation is accepted
	if err := runner.LoadOptionsFile(path, &ours); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ours.ConfigurableOptions, theirs) {
		t.Errorf("read differently from upstream:\n ours: %+v\ntheirs: %+v", ours.ConfigurableOptions, theirs)
	}
	if len(ours.Warnings) != 0 {
		t.Errorf("warnings for an upstream file: %v", ours.Warnings)
	}
}
