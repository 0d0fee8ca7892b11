package tests

import (
	"strings"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// FaultFidelityHTTP2Truncation checks what an HTTP/2 client sees when the
// backend fails after its response started (the faults of
// FaultFidelityHTTP1Truncation): the stream must not end with END_STREAM
// as if the body were complete (RFC 9113 section 8.1: a response is
// complete only with its END_STREAM; section 5.4.2: a stream that cannot
// complete is reset). A reset stream, with or without the HEADERS and DATA
// that came first, or the Gateway's own error status, passes. The clients
// are h2c with prior knowledge on the HTTP listener (skipped when the
// Gateway does not speak it there, which HTTPRoutes do not require) and
// TLS on the HTTPS listener (skipped when ALPN does not choose h2). The
// failing request is written and read frame by frame: what is checked is
// the frame that ended its stream, RST_STREAM or END_STREAM, for a
// response with a Content-Length (mid-body, after-headers) and without
// one (streamed-mid-body) alike; a body short of its Content-Length, which
// Go's client would report by itself, is not enough. Each failing request
// must reach the backend once.
var FaultFidelityHTTP2Truncation = suite.ConformanceTest{
	ShortName:   "FaultFidelityHTTP2Truncation",
	Description: "A backend failure after the response started reaches an HTTP/2 client (h2c or TLS) as a reset stream, never as a stream ended with END_STREAM.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportFaultFidelityTruncation,
	},
	Manifests: []string{ManifestPrefix + "fault-fidelity-h2.yaml"},
	Parallel:  true,
	Test:      testFaultFidelityHTTP2Truncation,
}

func testFaultFidelityHTTP2Truncation(t *testing.T, s *suite.ConformanceTestSuite) {
	g := newFFTarget(t, s, "fault-fidelity-h2")
	limit := ffGiveUp()
	// With no HTTP/2 path to the Gateway every case would skip and the test
	// pass having checked nothing: it skips as a whole instead.
	ready := g.get(t, g.client(t, viaTLS, false), viaTLS, "/ready", "", nil, limit)
	tlsH2 := ready.Err == nil && strings.HasPrefix(ready.Proto, "HTTP/2")
	observe.Record(t, "tls-alpn-h2", tlsH2)
	if !g.h2c && !tlsH2 {
		t.Skip("the Gateway offers no HTTP/2 path: its HTTP listener does not answer h2c with prior knowledge, and ALPN on its HTTPS listener did not choose h2 (HTTPRoutes require neither)")
	}
	for _, via := range []string{viaH2C, viaTLS} {
		for _, backend := range ffBackends {
			for _, f := range ffFaults {
				t.Run(via+"/"+backend[1:len(backend)-1]+"-backend/"+f.name, func(t *testing.T) {
					t.Parallel()
					g.skipUnless(t, via, backend)
					x := ffExchange{Exchange: testclient.Exchange{ID: testclient.NewID(t)}}
					end, h2 := g.streamEnd(t, via, backend+"truncated", x.ID, f.spec, limit)
					observe.Record(t, "stream-end", end.String())
					if !h2 {
						t.Skip("the HTTPS listener's ALPN did not choose h2")
					}
					streamNotCompleted(t, x.ID, end)
					g.singleAttempt(t, x)
				})
			}
		}
	}
}

// streamNotCompleted fails t when the stream of request id ended as a
// complete answer of the backend's: its 200 with END_STREAM, whatever the
// body's length and whether a content-length came with it. A reset
// stream (RST_STREAM, or a GOAWAY or close that cut it), with or without
// the HEADERS and DATA before it, passes, and so does an error status of
// the Gateway's own; a stream still open when the test gives up fails.
func streamNotCompleted(t *testing.T, id string, end h2StreamEnd) {
	t.Helper()
	switch {
	case end.End == "":
		t.Errorf("request %s: %s: the Gateway neither ended nor reset the stream before the test gave up; want RST_STREAM", id, end)
	case end.complete() && end.Status == "200":
		t.Errorf("request %s: %s: the backend failed mid-response, and the stream ended with END_STREAM as a complete answer does "+
			"(RFC 9113 section 8.1); want RST_STREAM (section 5.4.2)", id, end)
	}
}
