package runner

// Validate, and the parser and checker of each option value that names
// something (features, profiles, tests, labels and annotations, object
// names, URLs, addresses): flags parse with the parse functions, Validate
// checks with the check ones, so both accept the same form and name it in
// their errors.

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// Validate checks options however they were set, naming the options-file
// key of a bad value. Flags are checked as they are parsed, with errors
// naming the flag.
func (o *Options) Validate() error {
	var errs []error
	check := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	check("gatewayClassName", checkObjectName(o.GatewayClassName, false))
	if len(o.InstallSteps) > reports.MaxInstallSteps {
		check("installSteps", fmt.Errorf("%d bytes; at most %d are accepted", len(o.InstallSteps), reports.MaxInstallSteps))
	}
	check("meshName", checkObjectName(o.MeshName, true))
	check("supportedFeatures", checkFeatures(o.SupportedFeatures))
	check("exemptFeatures", checkFeatures(o.ExemptFeatures))
	check("conformanceProfiles", checkProfiles(o.ConformanceProfiles))
	check("skipTests", checkTestNames(o.SkipTests))
	check("runTest", checkRunTest(o.RunTest))
	check("mode", checkFileNamePart(o.Mode, false))
	check("implementation.version", checkFileNamePart(o.Implementation.Version, true))
	check("implementation.url", checkURL(o.Implementation.URL))
	check("namespaceLabels", checkKeyValues(o.NamespaceLabels, true))
	check("namespaceAnnotations", checkKeyValues(o.NamespaceAnnotations, false))
	check("timingTolerance", tests.CheckTimingTolerance(o.TimingTolerance))
	check("reportFolder", reports.CheckReportFolder(o.ReportFolder))
	if o.EchoImage != "" {
		check("echoImage", tests.CheckEchoImage(o.EchoImage))
	}
	check("retryBudgetLoad", o.RetryBudgetLoad.Check())
	return errors.Join(errs...)
}

// parseList splits a comma-separated list; an empty element is an error.
func parseList(v, form string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%q has an empty element; want comma-separated %s", v, form)
		}
		parts[i] = p
	}
	return parts, nil
}

func parseFeatures(v string) ([]features.FeatureName, error) {
	parts, err := parseList(v, "feature names, e.g. Gateway,HTTPRoute")
	if err != nil {
		return nil, err
	}
	out := make([]features.FeatureName, len(parts))
	for i, p := range parts {
		out[i] = features.FeatureName(p)
	}
	return out, checkFeatures(out)
}

func checkFeatures(fs []features.FeatureName) error {
	for _, f := range fs {
		if _, ok := features.Lookup(f); !ok {
			var names []string
			for _, known := range features.All() {
				names = append(names, string(known.Name))
			}
			return fmt.Errorf("unknown feature %q%s (`gatewitness features` lists them all)", f, didYouMean(string(f), names))
		}
	}
	return nil
}

func parseProfiles(v string) ([]suite.ConformanceProfileName, error) {
	parts, err := parseList(v, "profile names, e.g. GATEWAY-HTTP,GATEWAY-GRPC")
	if err != nil {
		return nil, err
	}
	out := make([]suite.ConformanceProfileName, len(parts))
	for i, p := range parts {
		out[i] = suite.ConformanceProfileName(p)
	}
	return out, checkProfiles(out)
}

func checkProfiles(ps []suite.ConformanceProfileName) error {
	for _, p := range ps {
		if _, ok := features.LookupProfile(string(p)); !ok {
			var names []string
			for _, known := range features.Profiles() {
				names = append(names, known.Name)
			}
			return fmt.Errorf("unknown conformance profile %q%s (known: %s)", p, didYouMean(string(p), names), strings.Join(names, ", "))
		}
	}
	return nil
}

// checkRunTest checks --run-test: one ShortName, as upstream's flag takes
// it, or a comma-separated list of them, each named once.
func checkRunTest(v string) error {
	names, err := parseList(strings.TrimSpace(v), "test ShortNames, e.g. HTTPRouteSimpleSameNamespace,HTTPRouteRetryBodyReplay")
	if err != nil {
		return err
	}
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%q names %s twice; want each test once", v, n)
		}
	}
	return checkTestNames(names)
}

func checkTestNames(names []string) error {
	known := map[string]bool{}
	var all []string
	for _, t := range AllTests() {
		known[t.ShortName] = true
		all = append(all, t.ShortName)
	}
	for _, n := range names {
		if !known[n] {
			return fmt.Errorf("no test has the ShortName %q%s (`gatewitness tests` lists them all)", n, didYouMean(n, all))
		}
	}
	return nil
}

// parseKeyValues parses "k=v,k2=v2". Label keys and values must be valid
// Kubernetes labels; annotation keys must be valid keys.
func parseKeyValues(v string, labels bool) (map[string]string, error) {
	form := "name=value pairs, e.g. team=gateway,env=ci"
	parts, err := parseList(v, form)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(parts))
	for _, p := range parts {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%q has no '='; want comma-separated %s", p, form)
		}
		m[k] = val
	}
	return m, checkKeyValues(m, labels)
}

func checkKeyValues(m map[string]string, labels bool) error {
	for k, v := range m {
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			return fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; "))
		}
		if labels {
			if msgs := content.IsLabelValue(v); len(msgs) > 0 {
				return fmt.Errorf("value %q of %s: %s", v, k, strings.Join(msgs, "; "))
			}
		}
	}
	return nil
}

func checkObjectName(v string, emptyOK bool) error {
	if v == "" && emptyOK {
		return nil
	}
	if msgs := content.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return fmt.Errorf("%q is not a Kubernetes object name: %s", v, strings.Join(msgs, "; "))
	}
	return nil
}

// checkFileNamePart checks a value that names the report file; an empty
// one is accepted when emptyOK (a default fills it).
func checkFileNamePart(v string, emptyOK bool) error {
	if v == "" && emptyOK {
		return nil
	}
	return reports.CheckFileNamePart(v)
}

func checkURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http or https URL; want e.g. https://github.com/example/gateway", v)
	}
	return nil
}

func parseAddress(v string) ([]gwv1.GatewaySpecAddress, error) {
	if v == "" {
		return nil, nil
	}
	if _, err := netip.ParseAddr(v); err == nil {
		return []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: v}}, nil
	}
	if msgs := content.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return nil, fmt.Errorf("%q is neither an IP address nor a hostname; want e.g. 192.0.2.10 or gw.example.com", v)
	}
	return []gwv1.GatewaySpecAddress{{Type: new(gwv1.HostnameAddressType), Value: v}}, nil
}
