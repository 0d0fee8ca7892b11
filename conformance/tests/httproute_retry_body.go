package tests

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// replayBodySize is the size of the request body the test retries: small
// enough for any gateway to keep for a retry (GEP-1731 sets no limit).
const replayBodySize = 4 << 10

// The body is sent in replayBodyParts parts after the headers, each
// replayBodyGap after the one before. A data plane that starts the first
// attempt once the headers are in, streaming the body as it arrives, has
// the whole body only if it keeps it for a retry; one that can retry only
// a body already whole when it began to send (HAProxy without "option
// http-buffer-request") then cannot retry. Sent in one write, the body
// usually arrives with the headers, and such a data plane passed.
const (
	replayBodyParts = 2
	replayBodyGap   = 150 * time.Millisecond
)

// HTTPRouteRetryBodyReplay checks that a retried POST reaches the backend
// with the same body on every attempt: the backend's ledger holds each
// attempt's body length and SHA-256. The body's parts arrive after the
// headers, with gaps, so only a data plane that holds the whole body for
// the retries passes. GEP-1731 does not ask a gateway to retry a
// non-idempotent request at all (nginx, for one, does not by default), so
// the test needs the finer HTTPRouteRetryNonIdempotent.
var HTTPRouteRetryBodyReplay = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryBodyReplay",
	Description: "A POST whose body arrives in parts after its headers (150ms apart) and that gets a retried status is retried, and every attempt reaches the backend with the whole body.",
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

	x := c.Do(t, testclient.Request{Method: http.MethodPost, Path: "/try", Fault: "fail=2;status=503", Body: body,
		BodyParts: replayBodyParts, BodyGap: replayBodyGap})
	observe.Record(t, "status", x.Status)
	observe.Record(t, "body", fmt.Sprintf("%d bytes in %d parts, %v apart, after the headers", replayBodySize, replayBodyParts, replayBodyGap))
	if x.Err != nil || x.Status != http.StatusOK {
		t.Fatalf("%v; want 200 after two retried 503s (the body arrived in %d parts %v apart after the headers: "+
			"a gateway that does not hold a body still arriving for a retry relays the first 503)", x, replayBodyParts, replayBodyGap)
	}
	e := c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "ledger", testclient.Summary(e))
	if len(e.Attempts) != 3 {
		t.Fatalf("the backend saw %s, want 3 attempts", testclient.Summary(e))
	}
	for _, a := range e.Attempts {
		if a.BodyBytes != replayBodySize || a.BodySHA256 != want {
			t.Errorf("attempt %d reached the backend with %d body bytes, SHA-256 %s; want the %d bytes sent, SHA-256 %s",
				a.Number, a.BodyBytes, a.BodySHA256, replayBodySize, want)
		}
	}
}
