package tests

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/features"
)

// FaultFidelityHTTP1Truncation checks what an HTTP/1.1 client sees when
// the backend fails after its response started: the backend resets its
// connection (or stream) in the middle of a Content-Length body, right
// after its headers, or in the middle of a streamed body. The client must
// not get what looks like the backend's complete answer (RFC 9112
// section 6.3: a message is complete only when its framing says so; a
// proxy that cannot complete a response closes the connection short of
// its Content-Length, or without the last-chunk, section 8). The
// Gateway's own error status, or no response at all, is a failure the
// client sees too and passes; so does closing instead of sending a
// partial chunk. A Gateway that keeps the connection open without ending
// the response fails when the test gives up. Each failing request must
// reach the backend once (the route has no retries).
var FaultFidelityHTTP1Truncation = suite.ConformanceTest{
	ShortName:   "FaultFidelityHTTP1Truncation",
	Description: "A backend failure after the response started reaches an HTTP/1.1 client as an incomplete response (short of its Content-Length or without its last-chunk, then a close), never as a complete one.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportFaultFidelityTruncation,
	},
	Manifests: []string{ManifestPrefix + "fault-fidelity-h1.yaml"},
	Parallel:  true,
	Test:      testFaultFidelityHTTP1Truncation,
}

func testFaultFidelityHTTP1Truncation(t *testing.T, s *suite.ConformanceTestSuite) {
	g := newFFTarget(t, s, "fault-fidelity-h1")
	limit := ffGiveUp()
	for _, backend := range ffBackends {
		for _, f := range ffFaults {
			t.Run(backend[1:len(backend)-1]+"-backend/"+f.name, func(t *testing.T) {
				t.Parallel()
				g.skipUnless(t, viaH1, backend)
				x := g.get(t, g.client(t, viaH1, false), viaH1, backend+"truncated", f.spec, nil, limit)
				truncationVisible(t, x)
				g.singleAttempt(t, x)
			})
		}
	}
}
