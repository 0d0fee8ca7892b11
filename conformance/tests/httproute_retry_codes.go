package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// HTTPRouteRetryCodesAndAttempts checks retry.codes and retry.attempts
// (GEP-1731) by the backend's ledger: each status an implementation MUST
// support (500, 502, 503, 504) is retried when listed; a status not listed,
// and 404, is attempted exactly once; with attempts: N a backend that
// recovers after N failures succeeds, and one that needs N+1 fails, after
// exactly 1+N attempts.
//
// The GEP only says the gateway MUST return an error after the last
// attempt, so the test accepts any status from 400 up there; with
// HTTPRouteRetryLastStatus it requires the backend's own last response.
var HTTPRouteRetryCodesAndAttempts = suite.ConformanceTest{
	ShortName:   "HTTPRouteRetryCodesAndAttempts",
	Description: "An HTTPRoute retry stanza retries exactly the listed status codes, at most retry.attempts times, as the backend's ledger shows.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		features.SupportHTTPRouteRetryCodes,
	},
	Manifests: []string{ManifestPrefix + "httproute-retry-codes.yaml"},
	Parallel:  true,
	Test:      testHTTPRouteRetryCodesAndAttempts,
}

func testHTTPRouteRetryCodesAndAttempts(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "retry-codes.gatewitness.test"
	gwAddr := attachRoutes(t, s, host, "/ready", "gatewitness-retry-codes", "gatewitness-retry-codes")
	c := newRouteClient(t, s, gwAddr, host)
	lastStatus := s.SupportedFeatures.Has(features.SupportHTTPRouteRetryLastStatus)

	type retryCase struct {
		name, path, fault string
		// status is the status the client must get; 0 means "an error"
		// (400 or above), the backend's last status when lastStatus.
		status   int
		attempts []int // the statuses the backend answered, in order
	}
	var cases []retryCase
	for _, code := range []int{500, 502, 503, 504} {
		cases = append(cases, retryCase{
			name:     fmt.Sprintf("listed_%d_is_retried", code),
			path:     "/listed",
			fault:    fmt.Sprintf("fail=1;status=%d", code),
			status:   http.StatusOK,
			attempts: []int{code, 200},
		})
	}
	cases = append(cases,
		retryCase{"unlisted_404_is_not_retried", "/listed", "fail=1;status=404", 404, []int{404}},
		retryCase{"unlisted_503_is_not_retried", "/only-500", "fail=1;status=503", 503, []int{503}},
		retryCase{"recovers_after_attempts_failures", "/attempts-3", "fail=3;status=503", 200, []int{503, 503, 503, 200}},
		retryCase{"fails_when_it_needs_one_more", "/attempts-3", "fail=4;status=503", 0, []int{503, 503, 503, 503}},
		retryCase{"fails_with_mixed_codes", "/listed", "script=502|504|503|ok", 0, []int{502, 504, 503}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := c.Do(t, testclient.Request{Path: tc.path, Fault: tc.fault})
			if x.Err != nil {
				t.Fatalf("%s with fault %q: %v", tc.path, tc.fault, x)
			}
			e := c.SettledLedger(t, x.ID, settleWithin())
			observe.Record(t, "status", x.Status)
			observe.Record(t, "attempts", len(e.Attempts))
			observe.Record(t, "ledger", testclient.Summary(e))

			var got []int
			for _, a := range e.Attempts {
				got = append(got, a.Status)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.attempts) || e.Dropped != 0 {
				t.Errorf("%s with fault %q: the backend answered %v (%s), want exactly %v",
					tc.path, tc.fault, got, testclient.Summary(e), tc.attempts)
			}
			last := tc.attempts[len(tc.attempts)-1]
			switch {
			case tc.status != 0 && x.Status != tc.status:
				t.Errorf("%s with fault %q: %v, want status %d", tc.path, tc.fault, x, tc.status)
			case tc.status == 0 && x.Status < 400:
				t.Errorf("%s with fault %q: %v, want an error status after the last attempt", tc.path, tc.fault, x)
			case tc.status == 0 && lastStatus:
				checkLastResponse(t, x, last, len(tc.attempts))
			}
		})
	}
}

// checkLastResponse checks, for HTTPRouteRetryLastStatus, that the client
// got the backend's own answer to the last attempt: its status, and the
// echo body naming that attempt.
func checkLastResponse(t *testing.T, x testclient.Exchange, status, attempt int) {
	t.Helper()
	if x.Status != status {
		t.Errorf("%v; want the backend's last status %d (%s)", x, status, features.SupportHTTPRouteRetryLastStatus)
		return
	}
	var echo struct {
		RequestID string `json:"requestId"`
		Attempt   int    `json:"attempt"`
	}
	if err := json.Unmarshal(x.Body, &echo); err != nil {
		t.Errorf("%v; the body is not the backend's echo: %v (%s)", x, err, features.SupportHTTPRouteRetryLastStatus)
		return
	}
	if echo.RequestID != x.ID || echo.Attempt != attempt {
		t.Errorf("%v; the body echoes request %q attempt %d, want %q attempt %d (%s)",
			x, echo.RequestID, echo.Attempt, x.ID, attempt, features.SupportHTTPRouteRetryLastStatus)
	}
}
