package tests

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// retryBackoff is the route's retry.backoff in
// gatewitness/httproute-retry-backoff.yaml.
const retryBackoff = 400 * time.Millisecond

// backoffRequests is how many retried requests run at once.
const backoffRequests = 8

// HTTPRouteRetryBackoffGaps checks retry.backoff (GEP-1731: "unsuccessful
// backend requests are not retried before the configured minimum
// duration"): several requests at once each fail twice with a listed code
// and then succeed, and for every request, every retry arrives at the
// backend at least the backoff after the previous attempt ended, by the
// backend's clock (less ledgerLag, the backend's recording delay).
// Exponential growth, caps and jitter are allowed; only the minimum is
// checked.
var HTTPRouteRetryBackoffGaps = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryBackoffGaps",
	Description: "No retry of an HTTPRoute request reaches the backend before retry.backoff after the previous attempt ended, under parallel load.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		features.SupportHTTPRouteRetryBackoff,
	},
	Manifests: []string{ManifestPrefix + "httproute-retry-backoff.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteRetryBackoffGaps,
}

func testHTTPRouteRetryBackoffGaps(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-backoff.gatewitness.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatewitness-retry-backoff", "gatewitness-retry-backoff")
	c := newRouteClient(t, s, gwAddr, host)

	var wg sync.WaitGroup
	xs := make([]testclient.Exchange, backoffRequests)
	for i := range xs {
		wg.Go(func() { xs[i] = c.Do(t, testclient.Request{Path: "/try", Fault: "fail=2;status=503"}) })
	}
	wg.Wait()

	smallest := time.Duration(-1)
	for i, x := range xs {
		if x.Err != nil || x.Status != http.StatusOK {
			t.Errorf("request %d: %v; want 200 after two retried 503s", i, x)
			continue
		}
		e := c.SettledLedger(t, x.ID, settleWithin())
		if len(e.Attempts) != 3 {
			t.Errorf("request %d (%s): the backend saw %s, want 3 attempts", i, x.ID, testclient.Summary(e))
			continue
		}
		gs, err := testclient.Gaps(e)
		if err != nil {
			t.Errorf("request %d (%s): %v", i, x.ID, err)
			continue
		}
		observe.Record(t, fmt.Sprintf("gaps[%d]", i), gs)
		for k, g := range gs {
			if smallest < 0 || g < smallest {
				smallest = g
			}
			// Earlier fails: the backoff is a minimum users rely on to
			// give a struggling backend time. There is no upper bound:
			// the backoff may grow, and have jitter.
			if g < retryBackoff-ledgerLag() {
				t.Errorf("request %d (%s): retry %d arrived %v after attempt %d ended; want at least the backoff %v",
					i, x.ID, k+1, g, k+1, retryBackoff)
			}
		}
	}
	observe.Record(t, "backoff", retryBackoff)
	observe.Record(t, "smallest-gap", smallest)
}
