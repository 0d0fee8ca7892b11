package tests

import (
	"net/http"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// HTTPRouteRetryStreamReset checks GEP-1731's "Implementations SHOULD retry
// on connection errors (disconnect, reset, ...)" where the backend speaks
// HTTP/2: the backend resets the stream of the first attempt (RST_STREAM
// INTERNAL_ERROR, before the response headers) and leaves the connection
// open; the gateway must retry, and the client gets the second attempt's
// 200. The ledger shows both attempts.
//
// A transport does not resend a stream reset with INTERNAL_ERROR by itself
// (HTTP/2 clients resend only REFUSED_STREAM, which says the request was
// not processed), so the second attempt is the gateway's retry. A data
// plane whose retry policy covers connection failures but not resets
// (Envoy's retry_on: connect-failure without reset) fails.
var HTTPRouteRetryStreamReset = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryStreamReset",
	Description: "An HTTPRoute with a retry stanza retries an attempt whose HTTP/2 stream the backend reset before the response headers, as the backend's ledger shows.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		gwfeatures.SupportHTTPRouteRetryConnectionError,
		gwfeatures.SupportHTTPRouteBackendProtocolH2C,
		features.SupportHTTPRouteRetryStreamReset,
	},
	Manifests: []string{ManifestPrefix + "httproute-retry-stream-reset.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteRetryStreamReset,
}

func testHTTPRouteRetryStreamReset(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-stream-reset.gatewitness.test"
	gwAddr := attachRoutesQuietly(t, s, host, "/ready", "gatewitness-retry-stream-reset", "gatewitness-retry-stream-reset")
	c := newRouteClient(t, s, gwAddr, host)
	x := c.Do(t, testclient.Request{Path: "/try", Fault: "script=reset|ok"})
	observe.Record(t, "status", x.Status)
	if x.Err != nil || x.Status != http.StatusOK {
		t.Errorf("%v; want 200 from the retry of the reset stream", x)
	}
	e := c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "ledger", testclient.Summary(e))
	if len(e.Attempts) != 2 || e.Attempts[0].Outcome != echowire.Reset || e.Attempts[1].Status != http.StatusOK {
		t.Errorf("the backend saw %s; want attempt 1 %s and attempt 2 answered 200", testclient.Summary(e), echowire.Reset)
	}
}
