package tests

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// The routes of gatewitness/httproute-retry-request-timeout.yaml:
// timeouts.request of both rules, and the retry.backoff of /long-backoff.
const (
	retryBudget      = 4 * time.Second
	retryLongBackoff = 10 * time.Second
)

// HTTPRouteRetryRequestTimeoutBudget checks GEP-1731's "the entire duration
// of the initial request and any retry attempts MUST not exceed the Request
// timeout duration. If any retry attempts are still in progress when the
// Request timeout duration has been reached, these SHOULD be canceled if
// possible and the Gateway MUST immediately return a timeout error."
//
//   - deadline_during_retry: the first attempt answers a listed 503 half
//     way between the tolerance and timeouts.request, the retry stalls; the
//     client gets a timeout error (504, or 408) at timeouts.request, within
//     the tolerance, and the backend's ledger shows the retry cancelled by
//     then and no third attempt. A gateway that gives each attempt its own
//     timeouts.request answers later than the tolerance allows, at any
//     accepted tolerance.
//   - trickling_past_deadline: the backend answers at once and sends its
//     body in chunks far apart less than timeouts.request, for longer than
//     it: timeouts.request is a deadline, not an inactivity timer, so the
//     exchange ends at it without the complete body.
//   - backoff_past_deadline, with HTTPRouteRetryBackoff: the backoff (10s)
//     outlasts timeouts.request (4s); the exchange still ends by
//     timeouts.request, with an error, after one attempt: waiting out the
//     backoff and answering a timeout, or answering the 503 at once, are
//     both allowed.
//
// With HTTPRouteTimeout504 the timeout error must be 504.
var HTTPRouteRetryRequestTimeoutBudget = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryRequestTimeoutBudget",
	Description: "timeouts.request bounds an HTTPRoute request with all its retries (and, with HTTPRouteRetryBackoff, its backoffs), as a deadline even while a response keeps flowing, and cancels the attempt in flight when it expires.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		gwfeatures.SupportHTTPRouteRequestTimeout,
		features.SupportHTTPRouteRetryWithRequestTimeout,
	},
	Manifests: []string{ManifestPrefix + "httproute-retry-request-timeout.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteRetryRequestTimeoutBudget,
}

func testHTTPRouteRetryRequestTimeoutBudget(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-request-timeout.gatewitness.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatewitness-retry-request-timeout", "gatewitness-retry-request-timeout")
	c := newRouteClient(t, s, gwAddr, host)
	measure(t)
	strict504 := s.SupportedFeatures.Has(features.SupportHTTPRouteTimeout504)
	tol := TimingTolerance()
	limit := retryBudget + 2*tol + 10*time.Second // the client's own bound

	t.Run("deadline_during_retry", func(t *testing.T) {
		t.Parallel()
		// The first attempt ends after the tolerance (so a gateway that
		// restarts the budget for the retry answers past the window) and
		// well before the budget (so the retry is in flight at it).
		first := (retryBudget + tol) / 2
		stall := retryBudget + 2*tol + time.Second
		x := c.Do(t, testclient.Request{Path: "/try", Fault: fmt.Sprintf("script=delay:%v+503|delay:%v", first, stall), Limit: limit})
		observe.Record(t, "status", x.Status)
		observe.Record(t, "elapsed", observe.Within(x.Elapsed, retryBudget, retryBudget, retryBudget+tol))
		checkTimeoutAnswer(t, x, retryBudget, strict504)
		e := c.SettledLedger(t, x.ID, settleWithin())
		observe.Record(t, "ledger", testclient.Summary(e))
		if len(e.Attempts) != 2 {
			t.Fatalf("the backend saw %s; want 2 attempts: the 503 and the stalled retry", testclient.Summary(e))
		}
		first0, retry := e.Attempts[0], e.Attempts[1]
		if retry.Outcome != echowire.Cancelled || retry.CancelledAt == nil {
			t.Fatalf("the retry in flight at the deadline ended %s; want it cancelled", retry.Outcome)
		}
		// The request timer starts before attempt 1 arrives, so the
		// cancellation is due within timeouts.request of that arrival.
		// Later than the tolerance fails: the retry outlived the budget.
		at := retry.CancelledAt.Sub(first0.Arrived)
		observe.Record(t, "retry-cancelled-at", observe.Within(at, retryBudget, 0, retryBudget+tol))
		if at > retryBudget+tol {
			missedLate(t, first0.Arrived, at, 0, retryBudget+tol, fmt.Sprintf("the retry was cancelled %v after attempt 1 arrived; want it by timeouts.request %v (tolerance %v)", at, retryBudget, tol))
		}
	})

	t.Run("trickling_past_deadline", func(t *testing.T) {
		t.Parallel()
		x := c.Do(t, testclient.Request{Path: "/try", Fault: trickleFault(retryBudget, tol), Limit: limit})
		checkDeadlineCut(t, x, retryBudget)
		e := c.SettledLedger(t, x.ID, settleWithin())
		observe.Record(t, "ledger", testclient.Summary(e))
		if len(e.Attempts) != 1 {
			t.Errorf("the backend saw %s; want exactly 1 attempt (its answer was 200)", testclient.Summary(e))
		}
	})

	t.Run("backoff_past_deadline", func(t *testing.T) {
		if !s.SupportedFeatures.Has(features.SupportHTTPRouteRetryBackoff) {
			t.Skipf("a backoff past the deadline is %s's business, which is not claimed", features.SupportHTTPRouteRetryBackoff)
		}
		t.Parallel()
		x := c.Do(t, testclient.Request{Path: "/long-backoff", Fault: "script=503|ok", Limit: limit})
		observe.Record(t, "status", x.Status)
		observe.Record(t, "elapsed", observe.Within(x.Elapsed, retryBudget, 0, retryBudget+tol))
		// Any error by the deadline: the 503 at once, or a timeout at the
		// deadline. Later than the tolerance fails (the budget was
		// exceeded); a success means a retry came before the backoff.
		switch {
		case x.Err == nil && x.Status >= 400 && x.Elapsed > retryBudget+tol:
			missedLate(t, time.Now().Add(-x.Elapsed), x.Elapsed, 0, retryBudget+tol, fmt.Sprintf("%v; want an error status by timeouts.request %v (tolerance %v)", x, retryBudget, tol))
		case x.Err != nil || x.Status < 400 || x.Elapsed > retryBudget+tol:
			t.Errorf("%v; want an error status by timeouts.request %v (tolerance %v): a retry after the %v backoff is past the deadline",
				x, retryBudget, tol, retryLongBackoff)
		}
		e := c.SettledLedger(t, x.ID, settleWithin())
		observe.Record(t, "ledger", testclient.Summary(e))
		if len(e.Attempts) != 1 {
			t.Errorf("the backend saw %s; want exactly 1 attempt", testclient.Summary(e))
		}
	})
}

// checkTimeoutAnswer checks that x ended with a timeout error no earlier
// than limit and within the timing tolerance after it: 504 or 408, or
// with strict504 (HTTPRouteTimeout504) 504 only.
func checkTimeoutAnswer(t *testing.T, x testclient.Exchange, limit time.Duration, strict504 bool) {
	t.Helper()
	switch {
	case x.Err != nil:
		t.Errorf("%v; want a timeout error status", x)
	case !isTimeoutStatus(x.Status):
		t.Errorf("%v; want a timeout error, 504 (or 408)", x)
	case strict504 && x.Status != http.StatusGatewayTimeout:
		t.Errorf("%v; want 504 Gateway Timeout (%s)", x, features.SupportHTTPRouteTimeout504)
	}
	// Earlier fails: the timeout is the time users give the exchange to
	// succeed. Later than the tolerance fails: the timeout did not end it.
	lo, hi := timerWindow(limit)
	checkWindow(t, time.Now().Add(-x.Elapsed), x.Elapsed, lo, hi, fmt.Sprintf("%v; the request timeout %v ended it", x, limit))
}

// trickleFault is a fault spec whose answer comes at once and whose body
// keeps flowing: a chunk every limit/8 (far inside limit), for limit plus
// twice the tolerance plus a second in all, so that it outlasts the
// latest end a window of limit accepts by more than the tolerance.
func trickleFault(limit, tol time.Duration) string {
	interval := limit / 8
	total := limit + 2*tol + time.Second
	chunks := int((total + interval - 1) / interval)
	return fmt.Sprintf("chunks=%d;interval=%v", chunks, interval)
}

// checkDeadlineCut checks an exchange that outlasts limit, by a response
// that stalls or keeps flowing: it must end no earlier than limit, and
// within the tolerance after it, without the complete body. Any way of
// ending it that tells the client it failed is allowed: a timeout status,
// the body cut off, or the connection closed before the headers (which the
// gateway may have held back). It records which.
func checkDeadlineCut(t *testing.T, x testclient.Exchange, limit time.Duration) {
	t.Helper()
	tol := TimingTolerance()
	observe.Record(t, "status", x.Status)
	observe.Record(t, "headers-after", x.Headers.Round(time.Millisecond))
	observe.Record(t, "elapsed", observe.Within(x.Elapsed, limit, limit, limit+tol))
	observe.Record(t, "body-bytes", len(x.Body))
	var outcome string
	switch {
	case x.Err != nil:
		outcome = "aborted before the response headers"
	case isTimeoutStatus(x.Status):
		outcome = "timeout status"
	case x.BodyErr != nil:
		outcome = "body cut off"
	default:
		outcome = "complete response"
		t.Errorf("%v; want the body cut off (or a timeout error) at the timeout %v, not delivered complete", x, limit)
	}
	observe.Record(t, "outcome", outcome)
	// Earlier fails: the timeout is the time users give the exchange.
	// Later than the tolerance fails: the timeout did not end it (an
	// inactivity timer lets a flowing body run on).
	lo, hi := timerWindow(limit)
	checkWindow(t, time.Now().Add(-x.Elapsed), x.Elapsed, lo, hi, fmt.Sprintf("%v; the timeout %v ended the exchange", x, limit))
}
