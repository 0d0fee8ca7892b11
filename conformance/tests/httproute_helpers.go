package tests

// Helpers shared by the HTTPRoute retry and timeout tests (GEP-1731,
// GEP-1742): a client that talks to the echo-backend through a Gateway,
// sends a fault spec and a request id, times the whole exchange, and reads
// the backend's ledger back through the same Gateway.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"k8s.io/apimachinery/pkg/types"
	gwhttp "sigs.k8s.io/gateway-api/conformance/utils/http"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// infraNamespace is the namespace of the upstream base manifests, where
// gatewitness's HTTPRoute tests put their routes and backends.
const infraNamespace = "gateway-conformance-infra"

// sharedGateway is the upstream base Gateway the HTTPRoute tests attach
// to: one HTTP listener on port 80 for routes of its own namespace. Each
// test's routes have a hostname of their own, so parallel tests never
// share a path (the ledger path /_gatewitness/ above all).
var sharedGateway = types.NamespacedName{Namespace: infraNamespace, Name: "same-namespace"}

// ledgerLag is how much earlier than the gateway an event may look when
// the backend records it: the echo-backend writes an attempt's end (or
// notices a cancellation) a moment after the gateway could act on it, a
// moment that grows on a loaded machine. Gaps measured from the ledger are
// checked against the configured duration minus ledgerLag: a twentieth of
// the timing tolerance (50ms to 100ms), far below every duration the tests
// configure, so a gateway that ignores a backoff still fails.
func ledgerLag() time.Duration { return TimingTolerance() / 20 }

// arrivalLag is how much later than the gateway's start of an attempt the
// backend may record the attempt's arrival: the connection's setup and the
// request's transfer. A duration the backend measures from an arrival may
// look that much shorter than the gateway's: a quarter of the timing
// tolerance (250ms to 500ms).
func arrivalLag() time.Duration { return TimingTolerance() / 4 }

// newRouteClient returns a client for host on the Gateway at gwAddr,
// dialing as the suite does (DialContext). Its connections are closed when
// t ends.
func newRouteClient(t *testing.T, s *suite.ConformanceTestSuite, gwAddr, host string) *testclient.Route {
	return testclient.NewRoute(t, testclient.DialFunc(DialContext(s)), gwAddr, host)
}

// settleWithin is how long a test waits for the backend to record the end
// of an attempt the gateway has already ended (testclient.SettledLedger):
// 5s plus the timing tolerance.
func settleWithin() time.Duration { return 5*time.Second + TimingTolerance() }

// attachRoutes waits until the routes named in infraNamespace are accepted
// by the shared Gateway and have resolved references, then until path on
// host answers 200 from the Deployment backend consistently (the data plane
// is programmed and the backend is ready). It returns the Gateway's
// address.
func attachRoutes(t *testing.T, s *suite.ConformanceTestSuite, host, path, backend string, routes ...string) string {
	t.Helper()
	return attachRoutesTo(t, s, sharedGateway, host, path, backend, routes...)
}

// attachRoutesTo is attachRoutes for the Gateway gw rather than the shared
// one.
func attachRoutesTo(t *testing.T, s *suite.ConformanceTestSuite, gw types.NamespacedName, host, path, backend string, routes ...string) string {
	t.Helper()
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: infraNamespace, Name: r}
	}
	gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(gw), nns...)
	for _, nn := range nns {
		kubernetes.HTTPRouteMustHaveResolvedRefsConditionsTrue(t, s.Client, s.TimeoutConfig, nn, gw)
	}
	awaitFirstOK(t, s, gwAddr, host, path)
	gwhttp.MakeRequestAndExpectEventuallyConsistentResponse(t, s.RoundTripper, s.TimeoutConfig, gwAddr, gwhttp.ExpectedResponse{
		Request:   gwhttp.Request{Host: host, Path: path},
		Response:  gwhttp.Response{StatusCode: http.StatusOK},
		Backend:   backend,
		Namespace: infraNamespace,
	})
	return gwAddr
}

// awaitFirstOK polls path on host through the Gateway at gwAddr, at the
// suite's status poll interval but no more often than every 50ms (each
// poll is a request through the data plane to a backend), until it
// answers 200 or the consistency timeout passes; the consistency check
// that follows it judges. That
// check waits a whole second after a miss, and a route is often accepted
// a few milliseconds before the data plane serves it (404) or its
// backend's pod is ready (503): without this, such a test would wait that
// second each time.
func awaitFirstOK(t *testing.T, s *suite.ConformanceTestSuite, gwAddr, host, path string) {
	t.Helper()
	exp := gwhttp.ExpectedResponse{Request: gwhttp.Request{Host: host, Path: path}}
	req := gwhttp.MakeRequest(t, &exp, gwAddr, "HTTP", "http")
	interval := max(s.TimeoutConfig.DefaultPollInterval, 50*time.Millisecond)
	testclient.Poll(s.TimeoutConfig.MaxTimeToConsistency, interval, func() bool {
		_, res, err := s.RoundTripper.CaptureRoundTrip(req)
		return err == nil && res.StatusCode == http.StatusOK
	})
}

// attachRoutesQuietly is attachRoutes for a test that must control every
// connection the gateway opens to its backend: the consistency check goes
// through the test's own client, whose requests ask the backend to answer
// "Connection: close", so the check leaves the gateway no idle connection
// to that backend. It waits for the suite's RequiredConsecutiveSuccesses
// answers in a row from a pod of backend.
func attachRoutesQuietly(t *testing.T, s *suite.ConformanceTestSuite, host, path, backend string, routes ...string) string {
	t.Helper()
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: infraNamespace, Name: r}
	}
	gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(sharedGateway), nns...)
	for _, nn := range nns {
		kubernetes.HTTPRouteMustHaveResolvedRefsConditionsTrue(t, s.Client, s.TimeoutConfig, nn, sharedGateway)
	}
	c := newRouteClient(t, s, gwAddr, host)
	c.EchoSetHeader = closeEveryConnection
	need := max(s.TimeoutConfig.RequiredConsecutiveSuccesses, 1)
	var x testclient.Exchange
	var echo struct {
		Pod string `json:"pod"`
	}
	// need answers in a row: a miss starts the count again.
	inARow := testclient.Poll(s.TimeoutConfig.MaxTimeToConsistency, 100*time.Millisecond, func() bool {
		for range need {
			x = c.Do(t, testclient.Request{Path: path, Limit: 5 * time.Second})
			echo.Pod = ""
			if x.Err != nil || x.Status != http.StatusOK || json.Unmarshal(x.Body, &echo) != nil || !strings.HasPrefix(echo.Pod, backend) {
				return false
			}
		}
		return true
	})
	if !inARow {
		t.Fatalf("%s%s through the Gateway %s: no %d answers in a row from a pod of %s within %v; last: %v (pod %q)",
			host, path, gwAddr, need, backend, s.TimeoutConfig.MaxTimeToConsistency, x, echo.Pod)
	}
	return gwAddr
}

// isTimeoutStatus reports whether status is a timeout error the GEP-1742
// text allows for an expired timeout: 504 Gateway Timeout, or 408 Request
// Timeout, which some implementations send.
func isTimeoutStatus(status int) bool {
	return status == http.StatusGatewayTimeout || status == http.StatusRequestTimeout
}

// within reports whether d lies in [want-early, want+late].
func inWindow(d, want, early, late time.Duration) bool {
	return d >= want-early && d <= want+late
}
