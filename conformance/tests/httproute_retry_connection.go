package tests

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// refusedRequests is how many requests go to the Service with a refusing
// endpoint: with two endpoints, a gateway that chose at random would send
// none of them to the refusing one once in 2^refusedRequests runs.
const refusedRequests = 10

// HTTPRouteRetryConnectionErrors checks GEP-1731's "Implementations SHOULD
// retry on connection errors (disconnect, reset, timeout, TCP failure) if a
// retry stanza is configured", which upstream's HTTPRouteRetryConnectionError
// feature names: an attempt that the backend resets, or closes, before the
// response headers is retried (the ledger shows it and its retry). The
// backend has one endpoint, which answers the retry: GEP-1731 does not say
// where a retry goes, and a data plane that retries on the same endpoint
// passes. The status codes the stanza lists (500) play no part.
//
// With the finer HTTPRouteRetryRefusedToOtherEndpoint claimed, requests to
// a Service one of whose two endpoints refuses connections must also all
// succeed, each reaching the working backend exactly once: the retry of a
// refused connection goes to another endpoint. A refusing endpoint refuses
// the retry too, so the case needs a data plane that moves on.
//
// A transport may resend a request by itself when a connection it reused
// from its pool fails (Go's net/http does, for a GET): a gateway with no
// retry at all would then look as if it retried. So the backend answers
// every request of this test with "Connection: close", the gateway has no
// idle connection to it, and the failing attempt arrives on a fresh
// connection, which no transport resends; the ledger's connRequest shows
// it, and the test fails if it does not.
var HTTPRouteRetryConnectionErrors = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryConnectionErrors",
	Description: "An HTTPRoute with a retry stanza retries attempts that were reset or closed before the response headers on a fresh backend connection (so no transport's own resend can stand in for the retry), as the backend's ledger counts attempts; with HTTPRouteRetryRefusedToOtherEndpoint, the retry of a connection an endpoint refused reaches another endpoint.",
	Features:    retryOnConnectionErrorFeatures(),
	Manifests:   []string{ManifestPrefix + "httproute-retry-connection.yaml"},
	Parallel:    true,
	Test:        testHTTPRouteRetryConnectionErrors,
}

func testHTTPRouteRetryConnectionErrors(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-connection.gatewitness.test"
	c := freshConnectionClient(t, s, host, "gatewitness-retry-connection")

	// The connection errors, one after the other, and only then the
	// ledgers: a ledger read is answered without "Connection: close", and
	// would leave the gateway an idle connection to reuse.
	cases := []struct {
		name, fault string
		outcome     echowire.Outcome
	}{
		{"reset_before_headers", "script=reset|ok", echowire.Reset},
		{"closed_before_headers", "script=close|ok", echowire.Closed},
	}
	xs := make([]testclient.Exchange, len(cases))
	for i, tc := range cases {
		xs[i] = c.Do(t, testclient.Request{Path: "/try", Fault: tc.fault})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRetriedOnFreshConnection(t, c, xs[i], tc.outcome)
		})
	}

	if !s.SupportedFeatures.Has(features.SupportHTTPRouteRetryRefusedToOtherEndpoint) {
		observe.Record(t, "refused_endpoint", "not checked: "+string(features.SupportHTTPRouteRetryRefusedToOtherEndpoint)+" is not claimed")
		return
	}
	t.Run("refused_endpoint", func(t *testing.T) {
		waitRefusingEndpoint(t, s, c)
		failed := 0
		for i := range refusedRequests {
			x := c.Do(t, testclient.Request{Path: "/refused"})
			if x.Err != nil || x.Status != http.StatusOK {
				failed++
				t.Errorf("request %d: %v; want 200, from the working endpoint after a refused connection (%s)", i, x,
					features.SupportHTTPRouteRetryRefusedToOtherEndpoint)
				continue
			}
			e := c.SettledLedger(t, x.ID, settleWithin())
			if len(e.Attempts) != 1 {
				t.Errorf("request %d (%s): the working backend saw %s; want exactly 1 attempt", i, x.ID, testclient.Summary(e))
			}
		}
		observe.Record(t, "requests", refusedRequests)
		observe.Record(t, "failed", failed)
	})
}

// expectRetriedOnFreshConnection checks that the exchange
// x, whose first attempt the backend ended with outcome before the response
// headers (a fault such as "script=reset|ok"), was retried: 200 to the
// client, and the ledger shows the failing attempt on a fresh connection
// (which no transport resends by itself, so a second attempt is the
// gateway's retry) and a second attempt answered 200. It records the
// status, the ledger and the failing attempt's place on its connection.
func expectRetriedOnFreshConnection(t *testing.T, c *testclient.Route, x testclient.Exchange, outcome echowire.Outcome) {
	t.Helper()
	observe.Record(t, "status", x.Status)
	if x.Err != nil || x.Status != http.StatusOK {
		t.Errorf("%v; want 200 from the retry", x)
	}
	e := c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "ledger", testclient.Summary(e))
	if len(e.Attempts) == 0 {
		t.Fatalf("the backend saw no attempt of %s", x.ID)
	}
	first := e.Attempts[0]
	observe.Record(t, "failing-attempt-conn-request", first.ConnRequest)
	// The premise: a fresh connection, which no transport resends by
	// itself, so a second attempt is the gateway's retry.
	if first.ConnRequest != 1 {
		t.Fatalf("attempt 1 arrived as request %d of its connection (%s), though the backend closes every connection after one answer; want a fresh connection",
			first.ConnRequest, first.Conn)
	}
	if len(e.Attempts) != 2 || first.Outcome != outcome || e.Attempts[1].Status != http.StatusOK {
		t.Errorf("the backend saw %s; want attempt 1 %s and attempt 2 answered 200", testclient.Summary(e), outcome)
	}
}

// waitRefusingEndpoint waits until the Service gatewitness-retry-connection-mixed
// has both its endpoints ready and the gateway sends requests to both: on
// the route without retries, a request fails after one has succeeded. A
// failure alone proves nothing: a gateway that has not yet served the route
// or its endpoints (one whose status ran ahead of its data plane) answers
// 5xx too, and then the requests on /refused would fail for that reason, not
// for a missing retry. A success first shows the route is served with the
// working endpoint, so the failure after it is the refusing one.
func waitRefusingEndpoint(t *testing.T, s *suite.ConformanceTestSuite, c *testclient.Route) {
	t.Helper()
	servedOK := false
	var ready int
	var err error
	found := testclient.Poll(s.TimeoutConfig.MaxTimeToConsistency, 50*time.Millisecond, func() bool {
		if ready, err = readyEndpoints(s.Client, "gatewitness-retry-connection-mixed"); err != nil || ready != 2 {
			return false
		}
		x := c.Do(t, testclient.Request{Path: "/no-retry", Limit: 5 * time.Second})
		switch {
		case x.Err == nil && x.Status == http.StatusOK:
			servedOK = true
		case servedOK && (x.Err != nil || x.Status >= 500):
			observe.Record(t, "no-retry-status", fmt.Sprint(x.Status))
			return true
		}
		return false
	})
	if !found {
		t.Fatalf("the refusing endpoint did not come into the gateway's rotation in %v (ready endpoints %d, %v; a request on the route without retries succeeded: %v): want a request on that route to fail after one succeeded",
			s.TimeoutConfig.MaxTimeToConsistency, ready, err, servedOK)
	}
}

// readyEndpoints counts the ready endpoints of a Service in infraNamespace.
func readyEndpoints(c client.Client, service string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(infraNamespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return 0, fmt.Errorf("listing the EndpointSlices of %s: %w", service, err)
	}
	n := 0
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				n += len(ep.Addresses)
			}
		}
	}
	return n, nil
}
