package tests_test

import (
	"testing"

	"github.com/gatecheck/gatecheck/conformance/inprocess/pods"
	"github.com/gatecheck/gatecheck/conformance/inprocess/probeproxy"
	"github.com/gatecheck/gatecheck/conformance/negative"
	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/reports"
)

// The probe proxy's breakages: a proxy that accepts every TCP probe, as a
// sidecar that captures inbound traffic does, and one that answers every
// gRPC probe SERVING.
func init() {
	breakages["probe-proxy-tcp-always-up"] = runner.ReferenceGateway{
		Pods: func(o *pods.Options) { o.ProbeProxyFault = probeproxy.FaultTCPAlwaysUp },
	}
	breakages["probe-proxy-grpc-always-serving"] = runner.ReferenceGateway{
		Pods: func(o *pods.Options) { o.ProbeProxyFault = probeproxy.FaultGRPCAlwaysServing },
	}
}

// TestMeshProbeTestsCatchABrokenProbeProxy runs the probe tests against a
// reference probe proxy that hides an app's failure: the test of that probe
// type fails, the HTTP probe test still passes.
func TestMeshProbeTestsCatchABrokenProbeProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		breakage string
		fails    string
	}{
		{"probe-proxy-tcp-always-up", "MeshProbeTCP"},
		{"probe-proxy-grpc-always-serving", "MeshProbeGRPC"},
	} {
		t.Run(tc.breakage, func(t *testing.T) {
			t.Parallel()
			got := negative.Run(t, "TestNegativeHelper", tc.breakage, tc.fails, "MeshProbeHTTP")
			if got[tc.fails] != reports.Fail {
				t.Errorf("%s: %s = %q, want fail", tc.breakage, tc.fails, got[tc.fails])
			}
			if got["MeshProbeHTTP"] != reports.Pass {
				t.Errorf("%s: MeshProbeHTTP = %q, want pass (the HTTP probe is forwarded faithfully)", tc.breakage, got["MeshProbeHTTP"])
			}
		})
	}
}
