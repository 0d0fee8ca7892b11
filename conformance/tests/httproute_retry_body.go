package tests

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// replayBodySize is the size of the request body the test retries: small
// enough for any gateway to keep for a retry (GEP-1731 sets no limit).
const replayBodySize = 4 << 10

// HTTPRouteRetryBodyReplay checks that a retried POST reaches the backend
// with the same body on every attempt: the backend's ledger holds each
// attempt's body length and SHA-256. GEP-1731 does not ask a gateway to
// retry a non-idempotent request at all (nginx, for one, does not by
// default), so the test needs the finer HTTPRouteRetryNonIdempotent.
var HTTPRouteRetryBodyReplay = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryBodyReplay",
	Description: "A POST with a body that gets a retried status is retried, and every attempt reaches the backend with the same body.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		features.SupportHTTPRouteRetryNonIdempotent,
	},
	Manifests: []string{ManifestPrefix + "httproute-retry-body.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteRetryBodyReplay,
}

func testHTTPRouteRetryBodyReplay(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-body.gatewitness.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatewitness-retry-body", "gatewitness-retry-body")
	c := newRouteClient(t, s, gwAddr, host)

	body := make([]byte, replayBodySize)
	_, _ = rand.Read(body)
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])

	x := c.do(httpRequest{Method: http.MethodPost, Path: "/try", Fault: "fail=2;status=503", Body: body})
	observe.Record(t, "status", x.Status)
	if x.Err != nil || x.Status != http.StatusOK {
		t.Fatalf("%v; want 200 after two retried 503s", x)
	}
	e := c.settledLedger(x.ID)
	observe.Record(t, "ledger", attemptSummary(e))
	if len(e.Attempts) != 3 {
		t.Fatalf("the backend saw %s, want 3 attempts", attemptSummary(e))
	}
	for _, a := range e.Attempts {
		if a.BodyBytes != replayBodySize || a.BodySHA256 != want {
			t.Errorf("attempt %d reached the backend with %d body bytes, SHA-256 %s; want the %d bytes sent, SHA-256 %s",
				a.Number, a.BodyBytes, a.BodySHA256, replayBodySize, want)
		}
	}
}
