package tests

import (
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
// reply makes the backend see the request twice. The client must get an
// answer: the backend's status (then the failure), or the Gateway's own
// 5xx. With FaultFidelityRelayHeaders it must be the backend's status and
// headers (a header the backend was asked to set).
var FaultFidelitySingleAttempt = suite.ConformanceTest{
	ShortName:   "FaultFidelitySingleAttempt",
	Description: "A request whose backend fails mid-response, on a route without retries, reaches the backend exactly once through a client that reuses connections, and the client gets the backend's status (or the Gateway's 5xx), not an empty reply.",
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
					switch {
					case x.GaveUp:
						t.Errorf("%s: the Gateway neither answered nor closed before the test gave up", x.describe())
					case x.Err != nil:
						t.Errorf("%s: no response at all; want the backend's status and headers, then the failure (or the Gateway's 5xx)", x.describe())
					case x.Status >= 500:
						if strict {
							t.Errorf("%s: the Gateway's own error replaced the backend's status; want the backend's 200 and its headers, then the failure (%s)",
								x.describe(), features.SupportFaultFidelityRelayHeaders)
						}
					case x.Status != http.StatusOK || x.Header.Get(ffMarkerHeader) != "relayed":
						t.Errorf("%s, %s %q: want the backend's 200 with %s: relayed", x.describe(), ffMarkerHeader, x.Header.Get(ffMarkerHeader), ffMarkerHeader)
					}
					g.singleAttempt(t, x)
				})
			}
		}
	}
}
