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

// routeTimeout is timeouts.request of /request and timeouts.backendRequest
// of /backend-request in gatewitness/httproute-timeouts.yaml.
const routeTimeout = time.Second

// HTTPRouteTimeoutsWithoutRetry checks GEP-1742's timeouts on rules
// without a retry stanza, as deadlines:
//
//   - a backend slower than timeouts.request, or than
//     timeouts.backendRequest, gets the client a timeout error (504, or
//     408; 504 only with HTTPRouteTimeout504) at the timeout, within the
//     tolerance, after exactly one attempt, which the backend sees
//     cancelled;
//   - a response whose headers come at once and whose body stalls past the
//     timeout, and one whose body keeps flowing in chunks far apart less
//     than the timeout, for longer than it: both timeouts cover the response
//     to its end ("as close to the whole request-response transaction as
//     possible"; backendRequest: "to when the full response has been
//     received"), so the exchange must end by the timeout, within the
//     tolerance, without the complete body: with a timeout error status,
//     with the body cut off, or with the connection closed before the
//     headers (which the gateway may have held back). The report records
//     which. An inactivity timer, which a flowing body keeps resetting,
//     fails the second;
//   - "0s" disables both: a 1.5s answer comes through.
//
// Every slow backend outlasts the latest end the window accepts by more
// than the tolerance again, so no verdict depends on the tolerance.
var HTTPRouteTimeoutsWithoutRetry = suite.ConformanceTest{
	ShortName:   "HTTPRouteTimeoutsWithoutRetry",
	Description: "HTTPRoute timeouts.request and timeouts.backendRequest end a slow exchange with a timeout error in time and cancel the backend request; as deadlines, they end a response whose body stalls or keeps flowing past them; 0s disables them.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteRequestTimeout,
		gwfeatures.SupportHTTPRouteBackendTimeout,
		features.SupportHTTPRouteTimeoutDeadlines,
	},
	Manifests: []string{ManifestPrefix + "httproute-timeouts.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteTimeoutsWithoutRetry,
}

func testHTTPRouteTimeoutsWithoutRetry(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "timeouts.gatewitness.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatewitness-timeouts", "gatewitness-timeouts")
	c := newRouteClient(t, s, gwAddr, host)
	measure(t)
	strict504 := s.SupportedFeatures.Has(features.SupportHTTPRouteTimeout504)
	tol := TimingTolerance()
	slow := routeTimeout + 2*tol + time.Second // past the window's end by more than the tolerance
	limit := slow + 10*time.Second             // the client's own bound

	for _, path := range []string{"/request", "/backend-request"} {
		t.Run("slow_headers"+path, func(t *testing.T) {
			t.Parallel()
			x := c.Do(t, testclient.Request{Path: path, Fault: fmt.Sprintf("delay=%v", slow), Limit: limit})
			observe.Record(t, "status", x.Status)
			observe.Record(t, "elapsed", observe.Within(x.Elapsed, routeTimeout, routeTimeout, routeTimeout+tol))
			checkTimeoutAnswer(t, x, routeTimeout, strict504)
			e := c.SettledLedger(t, x.ID, settleWithin())
			observe.Record(t, "ledger", testclient.Summary(e))
			if len(e.Attempts) != 1 {
				t.Fatalf("the backend saw %s; want exactly 1 attempt (no retry stanza)", testclient.Summary(e))
			}
			a := e.Attempts[0]
			if a.Outcome != echowire.Cancelled || a.CancelledAt == nil {
				t.Fatalf("the attempt ended %s; want it cancelled at the timeout", a.Outcome)
			}
			// Later than the tolerance fails: the backend kept working
			// for a client that had its answer.
			at := a.CancelledAt.Sub(a.Arrived)
			observe.Record(t, "cancelled-after", observe.Within(at, routeTimeout, 0, routeTimeout+tol))
			if at > routeTimeout+tol {
				missedLate(t, a.Arrived, at, 0, routeTimeout+tol, fmt.Sprintf("the attempt was cancelled %v after it arrived; want it by the timeout %v (tolerance %v)", at, routeTimeout, tol))
			}
		})

		for _, body := range []struct{ name, fault string }{
			{"stalled_body", fmt.Sprintf("body-delay=%v", slow)},
			{"trickling_body", trickleFault(routeTimeout, tol)},
		} {
			t.Run(body.name+path, func(t *testing.T) {
				t.Parallel()
				x := c.Do(t, testclient.Request{Path: path, Fault: body.fault, Limit: limit})
				checkDeadlineCut(t, x, routeTimeout)
				e := c.SettledLedger(t, x.ID, settleWithin())
				observe.Record(t, "ledger", testclient.Summary(e))
				if len(e.Attempts) != 1 {
					t.Errorf("the backend saw %s; want exactly 1 attempt (no retry stanza)", testclient.Summary(e))
				}
				for _, a := range e.Attempts {
					if a.HeadersSent != nil {
						observe.Record(t, "backend-headers-after", a.HeadersSent.Sub(a.Arrived).Round(time.Millisecond))
					}
					if a.Ended != nil {
						observe.Record(t, "backend-ended-after", a.Ended.Sub(a.Arrived).Round(time.Millisecond))
					}
				}
			})
		}
	}

	t.Run("zero_disables", func(t *testing.T) {
		t.Parallel()
		const slow = 1500 * time.Millisecond
		x := c.Do(t, testclient.Request{Path: "/disabled", Fault: "delay=1500ms"})
		observe.Record(t, "status", x.Status)
		observe.Record(t, "elapsed", x.Elapsed.Round(time.Millisecond))
		if x.Err != nil || x.BodyErr != nil || x.Status != http.StatusOK || x.Elapsed < slow {
			t.Errorf("%v; want the backend's 200 after its %v delay: 0s disables both timeouts", x, slow)
		}
	})
}
