package site

import (
	"slices"
	"strings"
	"testing"

	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/reports"
)

// TestTLSRouteLinksNoConnectionTimeouts: the embedded connection-timeouts
// page names TLSRoute, but does not explain TLSRoute's upstream tests.
func TestTLSRouteLinksNoConnectionTimeouts(t *testing.T) {
	tr := reports.TestResult{ShortName: "TLSRouteSimpleSameNamespace", Source: reports.Upstream, Features: []gwfeatures.FeatureName{"Gateway", "TLSRoute"}}
	for _, d := range docsFor(semanticsDocs(), tr, DefaultSourceURL) {
		t.Errorf("TLSRouteSimpleSameNamespace links %s (%s); want no semantics page", d.Title, d.URL)
	}
}

// TestClaimChangesShownAsSuch: a night that claims a new feature shows
// the tests that ran because of it as newly claimed, not as broken, and
// the index says the claims changed.
func TestClaimChangesShownAsSuch(t *testing.T) {
	n0 := nightRun(0, map[string]reports.Result{"Retry": S, "Timeout": P, "Old": P})
	n1 := nightRun(1, map[string]reports.Result{"Retry": F, "Timeout": F, "Old": S})
	n0.Claims.Features = []gwfeatures.FeatureName{"HTTPRoute", "Legacy"}
	n1.Claims.Features = []gwfeatures.FeatureName{"HTTPRoute", "HTTPRouteRetry"}
	for _, r := range []*reports.Run{n0, n1} {
		for i := range r.Tests {
			r.Tests[i].Features = []gwfeatures.FeatureName{"HTTPRoute"}
			if r.Tests[i].ShortName == "Retry" {
				r.Tests[i].Features = append(r.Tests[i].Features, "HTTPRouteRetry")
			}
		}
	}
	h, err := NewHistory(n0, n1)
	if err != nil {
		t.Fatal(err)
	}
	s := groupSeries(h)[0]
	added, dropped := s.claimChanges(1)
	if !slices.Equal(added, []string{"HTTPRouteRetry"}) || !slices.Equal(dropped, []string{"Legacy"}) {
		t.Errorf("claim changes: +%q -%q", added, dropped)
	}
	kinds := map[string]string{}
	for _, c := range s.changes(1) {
		kinds[c.Test] = c.Kind()
	}
	if kinds["Retry"] != "newly claimed" || kinds["Timeout"] != "broken" {
		t.Errorf("kinds %v; want Retry newly claimed (its feature is), Timeout broken (its features were claimed before)", kinds)
	}
	_, page := buildIndex(t, h)
	for _, want := range []string{
		`The claims changed: newly claimed <code>HTTPRouteRetry</code>; no longer claimed <code>Legacy</code>.`,
		`<span class="test">Retry</span>: `, `(newly claimed: HTTPRouteRetry)`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the index lacks %q", want)
		}
	}
	if strings.Index(page, `id="changes"`) > strings.Index(page, `id="implementations"`) {
		t.Error("what changed comes after the implementations table; want it first")
	}
}
