package tests

import (
	"net/http"
	"net/url"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
)

// HTTPRouteRetryRefusedOnce checks the refused connection of GEP-1731's
// "Implementations SHOULD retry on connection errors (disconnect, reset,
// timeout, TCP failure)" on a backend of one endpoint: the backend refuses
// the gateway's next connection (it resets it as it accepts it, before a
// byte is read) and accepts the one after, so a data plane that retries on
// the same endpoint passes. As in HTTPRouteRetryConnectionErrors, every
// answer closes its connection, so the gateway has no idle connection and
// must open one for the request.
var HTTPRouteRetryRefusedOnce = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryRefusedOnce",
	Description: "An HTTPRoute with a retry stanza retries a request whose backend connection was refused (reset as it was accepted) by the route's one endpoint: the client gets 200, the backend counts one refused connection and its ledger one attempt, answered.",
	Features:    retryOnConnectionErrorFeatures(),
	Manifests:   []string{ManifestPrefix + "httproute-retry-refused-once.yaml"},
	Parallel:    true,
	Test:        testHTTPRouteRetryRefusedOnce,
}

func testHTTPRouteRetryRefusedOnce(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-refused-once.gatewitness.test"
	c := freshConnectionClient(t, s, host, "gatewitness-retry-refused-once")
	refuse := func(n string) echowire.AdminState {
		st, err := c.Admin(echowire.AdminRefusePath, url.Values{echowire.AdminConnectionsQuery: {n}})
		if err != nil {
			t.Fatalf("setting the backend to refuse %s connections: %v", n, err)
		}
		return st
	}
	before := refuse("1").Refuse.Refused
	x := c.Do(t, testclient.Request{Path: "/try"})
	refused := refuse("0").Refuse.Refused - before
	observe.Record(t, "status", x.Status)
	observe.Record(t, "refused-connections", refused)
	// The premise: the request's first attempt came on a new connection,
	// which the backend refused.
	if refused != 1 {
		t.Fatalf("the backend refused %d connections while the request was sent (%v); want 1: the gateway must open a new connection for it, as the backend closes every connection after its answer", refused, x)
	}
	if x.Err != nil || x.Status != http.StatusOK {
		t.Errorf("%v; want 200 from the retry of the refused connection", x)
	}
	e := c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "ledger", testclient.Summary(e))
	if len(e.Attempts) != 1 || e.Attempts[0].Status != http.StatusOK {
		t.Errorf("the backend saw %s; want the retry alone (the refused connection carried no request), answered 200", testclient.Summary(e))
	}
}
