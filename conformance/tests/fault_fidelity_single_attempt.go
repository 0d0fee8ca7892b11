package tests

import (
	"fmt"
	"net/http"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// ffMarkerHeader is a response header the backend is asked to add
// (X-Echo-Set-Header), to see whether its headers reached the client.
const ffMarkerHeader = "X-Gatewitness-Marker"

// FaultFidelitySingleAttempt checks that a request whose response fails
// mid-way, on a route without retries, reaches the backend exactly once,
// through clients that reuse their connections (HTTP/1.1 keep-alive, h2c,
// TLS) as browsers and curl do. An HTTP/1.1 client resends an idempotent
// request that a reused connection answered with nothing at all (RFC 9112
// section 9.3.1 allows it: the server may have closed an idle
// connection), so a Gateway that turns a failed response into an empty
// reply makes the backend see the request twice. What the test counts is
// the backend's attempts, and that the exchange ended (the client saw the
// response or its failure before the test gave up). It does not demand a
// status: an HTTP/2 stream reset before its HEADERS (RFC 9113 section
// 5.4.2 allows a reset at any point) with one attempt passes, since HTTP/2
// clients do not resend it. The status and headers are
// FaultFidelityRelayHeaders' business: when that is claimed, the client
// must get the backend's 200 and a header the backend was asked to set,
// then the failure.
var FaultFidelitySingleAttempt = suite.ConformanceTest{
	ShortName:   "FaultFidelitySingleAttempt",
	Description: "A request whose backend fails mid-response, on a route without retries, reaches the backend exactly once through a client that reuses connections (which resends a request answered by an empty reply); with FaultFidelityRelayHeaders, the client gets the backend's status and headers before the failure.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportFaultFidelitySingleAttempt,
	},
	Manifests: []string{ManifestPrefix + "fault-fidelity-single-attempt.yaml"},
	Parallel:  true,
	Test:      testFaultFidelitySingleAttempt,
}

func testFaultFidelitySingleAttempt(t *testing.T, s *suite.ConformanceTestSuite) {
	g := newFFTarget(t, s, "fault-fidelity-single-attempt")
	strict := s.SupportedFeatures.Has(features.SupportFaultFidelityRelayHeaders)
	for _, via := range []string{viaH1, viaH2C, viaTLS} {
		for _, backend := range ffBackends {
			for _, f := range ffFaults[:2] {
				t.Run(via+"/"+backend[1:len(backend)-1]+"-backend/"+f.name, func(t *testing.T) {
					t.Parallel()
					g.skipUnless(t, via, backend)
					c := g.client(t, via, true)
					// A first request leaves a connection to reuse.
					if warm := g.get(t, c, via, backend+"warm", "", nil, ffGiveUp()); warm.Err != nil || warm.Status != http.StatusOK {
						t.Fatalf("the request before the failing one: %s; want 200", warm.describe())
					}
					x := g.get(t, c, via, backend+"once", f.spec, http.Header{echowire.EchoSetHeader: {ffMarkerHeader + ":relayed"}}, ffGiveUp())
					x.record(t)
					observe.Record(t, "marker", x.Header.Get(ffMarkerHeader))
					if x.GaveUp {
						t.Errorf("%s: the Gateway neither answered nor closed before the test gave up", x.describe())
					} else if strict {
						relayedHeaders(t, x)
					}
					g.singleAttempt(t, x)
				})
			}
		}
	}
}

// relayedHeaders fails t unless x is the backend's 200 with the header it
// was asked to set (FaultFidelityRelayHeaders): the status and headers the
// backend sent before failing reached the client, not a reset stream, an
// empty reply or the Gateway's own error in their place.
func relayedHeaders(t *testing.T, x ffExchange) {
	t.Helper()
	want := fmt.Sprintf("want the backend's 200 with %s: relayed, then the failure (%s)", ffMarkerHeader, features.SupportFaultFidelityRelayHeaders)
	switch {
	case x.Err != nil:
		t.Errorf("%s: no status or headers reached the client; %s", x.describe(), want)
	case x.Status >= 500:
		t.Errorf("%s: the Gateway's own error replaced the backend's status; %s", x.describe(), want)
	case x.Status != http.StatusOK || x.Header.Get(ffMarkerHeader) != "relayed":
		t.Errorf("%s, %s %q: %s", x.describe(), ffMarkerHeader, x.Header.Get(ffMarkerHeader), want)
	}
}
