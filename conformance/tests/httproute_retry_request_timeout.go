package tests

import (
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatecheck/gatecheck/conformance/observe"
	"github.com/gatecheck/gatecheck/contract/echowire"
	"github.com/gatecheck/gatecheck/features"
)

func init() { ConformanceTests = append(ConformanceTests, HTTPRouteRetryRequestTimeoutBudget) }

// retryBudget is timeouts.request of both rules in
// gatecheck/httproute-retry-request-timeout.yaml.
const retryBudget = time.Second

// HTTPRouteRetryRequestTimeoutBudget checks GEP-1731's "the entire duration
// of the initial request and any retry attempts MUST not exceed the Request
// timeout duration. If any retry attempts are still in progress when the
// Request timeout duration has been reached, these SHOULD be canceled if
// possible and the Gateway MUST immediately return a timeout error."
//
//   - deadline_during_retry: the first attempt answers a listed 503 after
//     600ms, the retry stalls; the client gets a timeout error (504, or
//     408) at timeouts.request, within the tolerance, and the backend's
//     ledger shows the retry cancelled by then and no third attempt.
//   - backoff_past_deadline: the backoff (2s) outlasts timeouts.request
//     (1s); the exchange still ends by timeouts.request, with an error, after
//     one attempt: waiting out the backoff and answering a timeout, or
//     answering the 503 at once, are both allowed.
//
// With HTTPRouteTimeout504 the timeout error must be 504.
var HTTPRouteRetryRequestTimeoutBudget = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryRequestTimeoutBudget",
	Description: "timeouts.request bounds an HTTPRoute request with all its retries and backoffs, and cancels the attempt in flight when it expires.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		gwfeatures.SupportHTTPRouteRequestTimeout,
		features.SupportHTTPRouteRetryWithRequestTimeout,
	},
	Manifests: []string{"gatecheck/httproute-retry-request-timeout.yaml"},
	Parallel:  true,
	Test:      testRetryRequestTimeout,
}

func testRetryRequestTimeout(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-request-timeout.gatecheck.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatecheck-retry-request-timeout", "gatecheck-retry-request-timeout")
	c := newRouteClient(t, s, gwAddr, host)
	strict504 := s.SupportedFeatures.Has(features.SupportHTTPRouteTimeout504)
	tol := TimingTolerance()

	t.Run("deadline_during_retry", func(t *testing.T) {
		t.Parallel()
		c := *c
		c.t = t
		x := c.do(httpRequest{Path: "/try", Fault: "script=delay:600ms+503|delay:5s"})
		observe.Record(t, "status", x.Status)
		observe.Record(t, "elapsed", x.Elapsed.Round(time.Millisecond))
		checkTimeoutAnswer(t, x, retryBudget, strict504)
		e := c.settledLedger(x.ID)
		observe.Record(t, "ledger", attemptSummary(e))
		if len(e.Attempts) != 2 {
			t.Fatalf("the backend saw %s; want 2 attempts: the 503 and the stalled retry", attemptSummary(e))
		}
		first, retry := e.Attempts[0], e.Attempts[1]
		if retry.Outcome != echowire.Cancelled || retry.CancelledAt == nil {
			t.Fatalf("the retry in flight at the deadline ended %s; want it cancelled", retry.Outcome)
		}
		// The request timer starts before attempt 1 arrives, so the
		// cancellation is due within timeouts.request of that arrival.
		at := retry.CancelledAt.Sub(first.Arrived)
		observe.Record(t, "retry-cancelled-at", at.Round(time.Millisecond))
		if at > retryBudget+tol {
			t.Errorf("the retry was cancelled %v after attempt 1 arrived; want it by timeouts.request %v (tolerance %v)", at, retryBudget, tol)
		}
	})

	t.Run("backoff_past_deadline", func(t *testing.T) {
		t.Parallel()
		c := *c
		c.t = t
		x := c.do(httpRequest{Path: "/long-backoff", Fault: "script=503|ok"})
		observe.Record(t, "status", x.Status)
		observe.Record(t, "elapsed", x.Elapsed.Round(time.Millisecond))
		if x.Err != nil || x.Status < 400 || x.Elapsed > retryBudget+tol {
			t.Errorf("%v; want an error status by timeouts.request %v (tolerance %v): a retry after the 2s backoff is past the deadline",
				x, retryBudget, tol)
		}
		e := c.settledLedger(x.ID)
		observe.Record(t, "ledger", attemptSummary(e))
		if len(e.Attempts) != 1 {
			t.Errorf("the backend saw %s; want exactly 1 attempt", attemptSummary(e))
		}
	})
}

// checkTimeoutAnswer checks that x ended with a timeout error no earlier
// than limit and within the timing tolerance after it: 504 or 408, or
// with strict504 (HTTPRouteTimeout504) 504 only.
func checkTimeoutAnswer(t *testing.T, x httpExchange, limit time.Duration, strict504 bool) {
	t.Helper()
	tol := TimingTolerance()
	switch {
	case x.Err != nil:
		t.Errorf("%v; want a timeout error status", x)
	case !isTimeoutStatus(x.Status):
		t.Errorf("%v; want a timeout error, 504 (or 408)", x)
	case strict504 && x.Status != http.StatusGatewayTimeout:
		t.Errorf("%v; want 504 Gateway Timeout (%s)", x, features.SupportHTTPRouteTimeout504)
	}
	if !inWindow(x.Elapsed, limit, 0, tol) {
		t.Errorf("%v; want it to end %v after the request was sent (tolerance %v)", x, limit, tol)
	}
}
