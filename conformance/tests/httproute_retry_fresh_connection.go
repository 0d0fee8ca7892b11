package tests

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/features"
)

// What the tests of a retry on a connection error share
// (HTTPRouteRetryConnectionErrors, HTTPRouteRetryRefusedOnce): their
// features, and a backend that closes every connection after its answer,
// so that each request's first attempt arrives on a fresh connection.

// closeEveryConnection makes the echo-backend answer with "Connection:
// close" (echo-basic's X-Echo-Set-Header), so that it closes the
// connection after its answer and the gateway keeps no idle connection to
// it. Every request these tests send to their backend carries it.
const closeEveryConnection = "Connection:close"

// retryOnConnectionErrorFeatures are the features of a test of GEP-1731's
// "Implementations SHOULD retry on connection errors", whose backend's
// ledger counts the attempts: a new slice for each test.
func retryOnConnectionErrorFeatures() []features.FeatureName {
	return []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		gwfeatures.SupportHTTPRouteRetryConnectionError,
		features.SupportHTTPRouteRetryConnectionErrorAttempts,
	}
}

// freshConnectionClient attaches the HTTPRoute named route, whose backend
// Service has the same name (attachRoutesQuietly, on its path /ready),
// and returns a client for host whose every request asks the backend to
// close its connection after the answer: the gateway keeps no idle
// connection to it, so a request's first attempt comes on a new
// connection, which no transport resends by itself.
func freshConnectionClient(t *testing.T, s *suite.ConformanceTestSuite, host, route string) *testclient.Route {
	t.Helper()
	c := newRouteClient(t, s, attachRoutesQuietly(t, s, host, "/ready", route, route), host)
	c.EchoSetHeader = closeEveryConnection
	return c
}
