package tests

// Helpers shared by the HTTPRoute retry and timeout tests (GEP-1731,
// GEP-1742): a client that talks to the echo-backend through a Gateway,
// sends a fault spec and a request id, times the whole exchange, and reads
// the backend's ledger back through the same Gateway.

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"k8s.io/apimachinery/pkg/types"
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
// host is served by a pod of the Deployment backend servedInARow times in
// a row, each on a connection of its own (evidence.go): the data plane,
// every replica of it, serves the routes and the backend is ready. When
// the test's windows end, the routes are deleted first and its clean-up
// waits until they are no longer served (retire). It returns the
// Gateway's address.
func attachRoutes(t *testing.T, s *suite.ConformanceTestSuite, host, path, backend string, routes ...string) string {
	t.Helper()
	return attachRoutesTo(t, s, sharedGateway, host, path, backend, routes...)
}

// attachRoutesTo is attachRoutes for the Gateway gw rather than the shared
// one.
func attachRoutesTo(t *testing.T, s *suite.ConformanceTestSuite, gw types.NamespacedName, host, path, backend string, routes ...string) string {
	t.Helper()
	gwAddr, seen := routesAccepted(t, s, gw, routes)
	awaitRoutes(t, s, newRouteClient(t, s, gwAddr, host), path, backend, routes, seen)
	return gwAddr
}

// routesAccepted waits until gw is programmed, it and the HTTPRoutes named
// in infraNamespace are accepted and the routes' references resolved, and
// returns the Gateway's address and when it saw them.
func routesAccepted(t *testing.T, s *suite.ConformanceTestSuite, gw types.NamespacedName, routes []string) (gwAddr string, seen statusSeen) {
	t.Helper()
	seen.start = time.Now()
	seen.programmed = gatewayProgrammed(t, s, gw)
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: infraNamespace, Name: r}
	}
	gwAddr = kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(gw), nns...)
	for _, nn := range nns {
		kubernetes.HTTPRouteMustHaveResolvedRefsConditionsTrue(t, s.Client, s.TimeoutConfig, nn, gw)
	}
	seen.accepted = time.Now()
	return gwAddr, seen
}

// awaitRoutes is the evidence of a step that added the HTTPRoutes routes:
// path served through c by a pod of backend (served), and, when the
// test's windows end, the routes deleted and no longer served (retire).
func awaitRoutes(t *testing.T, s *suite.ConformanceTestSuite, c *testclient.Route, path, backend string, routes []string, seen statusSeen) {
	t.Helper()
	chk := httpCheck(t, c, path, backend)
	chk.oneAtATime = c.EchoSetHeader == closeEveryConnection
	names := routeNames("HTTPRoute", routes)
	served(t, s, chk, names, seen)
	retire(t, s, chk, names, deleteRoutes(s, newHTTPRoute, routes...))
}

// attachRoutesQuietly is attachRoutes for a test that must control every
// connection the gateway opens to its backend: the evidence goes through
// the test's own client, whose requests ask the backend to answer
// "Connection: close", so the check leaves the gateway no idle connection
// to that backend.
func attachRoutesQuietly(t *testing.T, s *suite.ConformanceTestSuite, host, path, backend string, routes ...string) string {
	t.Helper()
	gwAddr, seen := routesAccepted(t, s, sharedGateway, routes)
	c := newRouteClient(t, s, gwAddr, host)
	c.EchoSetHeader = closeEveryConnection
	awaitRoutes(t, s, c, path, backend, routes, seen)
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
