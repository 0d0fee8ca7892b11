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

// The route's timeouts.backendRequest and retry.backoff in
// gatewitness/httproute-retry-backend-timeout.yaml. backendRequest exceeds
// the largest allowance for the backend's late view of an attempt's
// arrival (arrivalLag), so the window's lower bound means something.
const (
	retryTimeoutBackendRequest = 1500 * time.Millisecond
	retryTimeoutBackoff        = 300 * time.Millisecond
)

// HTTPRouteRetryBackendTimeoutCancels checks GEP-1731's rule for attempts
// that reach timeouts.backendRequest: they "SHOULD be canceled if possible
// and the Gateway should wait for at least the specified backoff duration
// before attempting to retry". The first attempt stalls well past
// backendRequest; the backend's ledger must show it cancelled at about
// backendRequest (no earlier, and within the timing tolerance after), and
// a second attempt, whose answer the client gets. The retry stanza does not
// list 504: the feature's own text makes timed-out attempts retriable
// whenever a stanza is configured.
//
// The wait before the retry is checked only with HTTPRouteRetryBackoff:
// the GEP's "should wait" is lower case, and the backoff is that
// feature's business.
var HTTPRouteRetryBackendTimeoutCancels = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryBackendTimeoutCancels",
	Description: "An HTTPRoute attempt that exceeds timeouts.backendRequest is cancelled at about that time, as the backend sees it, and retried; with HTTPRouteRetryBackoff, no sooner than retry.backoff later.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		gwfeatures.SupportHTTPRouteBackendTimeout,
		features.SupportHTTPRouteRetryBackendTimeout,
		features.SupportHTTPRouteRetryCancelsTimedOutAttempt,
	},
	Manifests: []string{ManifestPrefix + "httproute-retry-backend-timeout.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteRetryBackendTimeoutCancels,
}

func testHTTPRouteRetryBackendTimeoutCancels(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-backend-timeout.gatewitness.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatewitness-retry-backend-timeout", "gatewitness-retry-backend-timeout")
	c := newRouteClient(t, s, gwAddr, host)
	measure(t)
	tol := TimingTolerance()
	backoff := s.SupportedFeatures.Has(features.SupportHTTPRouteRetryBackoff)

	// The first attempt stalls past the latest cancellation the window
	// accepts, by more than the tolerance again: a gateway that ignores
	// backendRequest lets it answer, and the test sees one attempt.
	stall := retryTimeoutBackendRequest + 2*tol + time.Second
	x := c.Do(t, testclient.Request{Path: "/try", Fault: fmt.Sprintf("script=delay:%v|ok", stall), Limit: stall + 10*time.Second})
	observe.Record(t, "status", x.Status)
	observe.Record(t, "elapsed", x.Elapsed.Round(time.Millisecond))
	if x.Err != nil || x.Status != http.StatusOK {
		t.Errorf("%v; want 200 from the retry of the timed-out attempt", x)
	}
	e := c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "ledger", testclient.Summary(e))
	if len(e.Attempts) != 2 {
		t.Fatalf("the backend saw %s; want 2 attempts: the stalled one, cancelled, and its retry", testclient.Summary(e))
	}
	first, retry := e.Attempts[0], e.Attempts[1]
	if first.Outcome != echowire.Cancelled || first.CancelledAt == nil {
		t.Fatalf("attempt 1 ended %s; want it cancelled by the gateway at timeouts.backendRequest (%v)", first.Outcome, retryTimeoutBackendRequest)
	}
	cancelAfter := first.CancelledAt.Sub(first.Arrived)
	observe.Record(t, "cancelled-after", cancelAfter.Round(time.Millisecond))
	// Earlier fails: backendRequest is the time users give a backend to
	// answer (the backend's clock starts at the attempt's arrival, up to
	// arrivalLag after the gateway's). Later than the tolerance fails: the
	// attempt was not cancelled at the timeout.
	checkWindow(t, first.Arrived, cancelAfter, retryTimeoutBackendRequest-arrivalLag(), retryTimeoutBackendRequest+tol,
		fmt.Sprintf("attempt 1 was cancelled, from its arrival, (timeouts.backendRequest %v)", retryTimeoutBackendRequest))
	gap := retry.Arrived.Sub(*first.CancelledAt)
	observe.Record(t, "gap", gap.Round(time.Millisecond))
	// Earlier fails, with HTTPRouteRetryBackoff: the backoff is a minimum
	// users rely on to give a struggling backend time. There is no upper
	// bound: the backoff may grow.
	if backoff && gap < retryTimeoutBackoff-ledgerLag() {
		t.Errorf("attempt 2 arrived %v after attempt 1 was cancelled; want at least the backoff %v (%s)", gap, retryTimeoutBackoff, features.SupportHTTPRouteRetryBackoff)
	}
}
