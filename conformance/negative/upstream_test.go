package negative_test

import (
	"testing"

	"github.com/gatewitness/gatewitness/conformance/negative"
	"github.com/gatewitness/gatewitness/conformance/runner/runnertest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/reports"
)

// ignoreHostnames breaks hostname intersection: every route answers every
// host its listener accepts, whatever its own hostnames say.
func ignoreHostnames(cfg *ir.Config) {
	for gi := range cfg.Gateways {
		for li := range cfg.Gateways[gi].Listeners {
			l := &cfg.Gateways[gi].Listeners[li]
			for ri := range l.HTTPRoutes {
				l.HTTPRoutes[ri].Hostnames = nil
			}
			for ri := range l.GRPCRoutes {
				l.GRPCRoutes[ri].Hostnames = nil
			}
		}
	}
}

var breakages = []negative.Breakage{{
	Name:    "hostnames-ignored",
	Models:  "a data plane that matches routes by path alone",
	Gateway: runnertest.ReferenceGateway{MutateConfig: ignoreHostnames},
}}

func TestNegativeHelper(t *testing.T) { negative.Helper(t, breakages) }

// TestUpstreamHostnameTestsCatchIgnoredHostnames runs upstream's hostname
// intersection test against the reference gateway, healthy and with
// hostname intersection ignored: healthy, it passes; broken, it fails while
// a test that does not depend on route hostnames still passes.
func TestUpstreamHostnameTestsCatchIgnoredHostnames(t *testing.T) {
	control := "HTTPRouteSimpleSameNamespace"
	selected := []string{control, "HTTPRouteHostnameIntersection"}

	t.Run("healthy", func(t *testing.T) {
		t.Parallel()
		healthy := negative.Run(t, "TestNegativeHelper", negative.Healthy, 0, selected...)
		for _, name := range selected {
			if healthy[name].Result != reports.Pass {
				t.Errorf("healthy gateway: %s = %q, want pass", name, healthy[name].Result)
			}
		}
	})
	t.Run("hostnames-ignored", func(t *testing.T) {
		t.Parallel()
		broken := negative.Run(t, "TestNegativeHelper", "hostnames-ignored", 0, selected...)
		if broken[control].Result != reports.Pass {
			t.Errorf("hostnames ignored: %s = %q, want pass (it does not depend on hostnames)", control, broken[control].Result)
		}
		if broken["HTTPRouteHostnameIntersection"].Result != reports.Fail {
			t.Errorf("hostnames ignored: HTTPRouteHostnameIntersection = %q, want fail", broken["HTTPRouteHostnameIntersection"].Result)
		}
	})
}
