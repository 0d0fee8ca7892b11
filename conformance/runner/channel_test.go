package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/features"
)

// linkedCRDs reads the CRDs of channel of the linked Gateway API release
// from the module cache, as hack/crds-of-release.sh copies them for the
// nightly's in-process runs.
func linkedCRDs(t *testing.T, channel string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "gateway-api@"+consts.BundleVersion, "config", "crd", channel)
	list, err := crds.ParseDir(os.DirFS(dir), ".")
	if err != nil {
		t.Fatalf("the linked release's %s CRDs (the module sigs.k8s.io/gateway-api@%s, which this test is built with): %v", channel, consts.BundleVersion, err)
	}
	return list
}

// hasRuleField reports whether the CRD named crd in list has the field
// spec.rules[].field in every served version.
func hasRuleField(t *testing.T, list []*apiextensionsv1.CustomResourceDefinition, crd, field string) bool {
	t.Helper()
	for _, c := range list {
		if c.Name != crd {
			continue
		}
		for _, v := range c.Spec.Versions {
			if !v.Served {
				continue
			}
			rules := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"].Items.Schema
			if _, ok := rules.Properties[field]; !ok {
				return false
			}
		}
		return true
	}
	t.Fatalf("no CRD %s", crd)
	return false
}

func hasCRD(list []*apiextensionsv1.CustomResourceDefinition, name string) bool {
	return slices.ContainsFunc(list, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == name })
}

// TestClaimsFollowTheCRDsChannel: on the standard channel's CRDs the
// in-process reference gateway claims no feature whose field only the
// experimental CRDs have (the nightly's standard cells failed every
// retry and retry budget test, the CRDs dropping the fields they set),
// and still claims the standard channel's features; on the experimental
// channel it claims all it implements.
func TestClaimsFollowTheCRDsChannel(t *testing.T) {
	standard := linkedCRDs(t, "standard")
	channel, err := crds.Channel(standard)
	if err != nil || channel != string(features.ChannelStandard) {
		t.Fatalf("crds.Channel(the standard CRDs) = %q, %v; want standard", channel, err)
	}
	o := DefaultOptions()
	setInProcessDefaults(&o, features.Channel(channel))
	claimed := o.SupportedFeatures

	// The fields the reference gateway's experimental features set, as the
	// standard CRDs of the linked release have them or not.
	retryStandard := hasRuleField(t, standard, "httproutes.gateway.networking.k8s.io", "retry")
	if got := slices.Contains(claimed, features.SupportHTTPRouteRetry); got != retryStandard {
		t.Errorf("on the standard channel, claims %s: %v; want %v, as its CRD has rules[].retry: %v", features.SupportHTTPRouteRetry, got, retryStandard, retryStandard)
	}
	if hasCRD(standard, "xbackendtrafficpolicies.gateway.networking.x-k8s.io") {
		t.Errorf("the standard CRDs have XBackendTrafficPolicy; this test's premise is stale")
	}
	for _, f := range []features.FeatureName{features.SupportBackendRetryBudget, features.SupportBackendRetryBudgetMinRetryRate, features.SupportBackendRetryBudgetPerBackend} {
		if slices.Contains(claimed, f) {
			t.Errorf("on the standard channel, claims %s, whose XBackendTrafficPolicy the standard CRDs lack", f)
		}
	}
	for _, f := range claimed {
		if r, _ := features.Lookup(f); r.Channel != features.ChannelStandard {
			t.Errorf("on the standard channel, claims %s, a feature of the %s channel", f, r.Channel)
		}
	}
	if retryStandard != slices.Contains(o.ConformanceProfiles, features.ProfileRetryBudgets) {
		// Its core has the retry feature, which a requested profile claims.
		t.Errorf("on the standard channel, requests the profiles %v; want %s only when the CRDs have rules[].retry (%v)", o.ConformanceProfiles, features.ProfileRetryBudgets, retryStandard)
	}
	// What the standard CRDs have stays claimed.
	for _, f := range []features.FeatureName{gwfeatures.SupportHTTPRoute, gwfeatures.SupportGRPCRoute, gwfeatures.SupportHTTPRouteRequestTimeout,
		gwfeatures.SupportHTTPRouteBackendTimeout, features.SupportHTTPRouteTimeoutDeadlines, gwfeatures.SupportHTTPRouteRequestMirror} {
		if !slices.Contains(claimed, f) {
			t.Errorf("on the standard channel, does not claim %s, a standard feature the reference gateway implements", f)
		}
	}

	experimental := linkedCRDs(t, "experimental")
	if channel, err := crds.Channel(experimental); err != nil || channel != string(features.ChannelExperimental) {
		t.Fatalf("crds.Channel(the experimental CRDs) = %q, %v; want experimental", channel, err)
	}
	o = DefaultOptions()
	setInProcessDefaults(&o, features.ChannelExperimental)
	if !slices.Equal(o.SupportedFeatures, ReferenceFeatures()) {
		t.Errorf("on the experimental channel, claims %v; want all the reference gateway's features %v", o.SupportedFeatures, ReferenceFeatures())
	}
}

// TestServedChannel: the embedded CRDs are the experimental channel's.
func TestServedChannel(t *testing.T) {
	if os.Getenv(crds.DirEnv) != "" {
		t.Skipf("%s is set", crds.DirEnv)
	}
	got, err := servedChannel()
	if err != nil || got != features.ChannelExperimental {
		t.Errorf("servedChannel() = %q, %v; want experimental", got, err)
	}
}
