package tests_test

import (
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatecheck/gatecheck/conformance/negative"
	"github.com/gatecheck/gatecheck/gateway/dataplane"
	"github.com/gatecheck/gatecheck/reports"
)

// gatecheck's HTTPRoute retry and timeout tests (GATECHECK-HTTP-RESILIENCE).
const (
	retryCodes          = "HTTPRouteRetryCodesAndAttempts"
	retryBackoff        = "HTTPRouteRetryBackoffGaps"
	retryBackendTimeout = "HTTPRouteRetryBackendTimeoutCancels"
	retryConnection     = "HTTPRouteRetryConnectionErrors"
	retryBudget         = "HTTPRouteRetryRequestTimeoutBudget"
	retryBody           = "HTTPRouteRetryBodyReplay"
	routeTimeouts       = "HTTPRouteTimeoutsWithoutRetry"
)

// eachHTTPRule returns a MutateConfig that applies f to every HTTPRoute
// rule of a snapshot.
func eachHTTPRule(f func(*dataplane.HTTPRule)) func(*dataplane.Config) {
	return func(cfg *dataplane.Config) {
		for gi := range cfg.Gateways {
			for li := range cfg.Gateways[gi].Listeners {
				l := &cfg.Gateways[gi].Listeners[li]
				for ri := range l.HTTPRoutes {
					for i := range l.HTTPRoutes[ri].Rules {
						f(&l.HTTPRoutes[ri].Rules[i])
					}
				}
			}
		}
	}
}

// withRetry returns a rule mutation that applies f to the retry stanza of
// rules that have one. The snapshot's stanzas may be shared with the
// controller's objects, so f gets a copy.
func withRetry(f func(*gwv1.HTTPRouteRetry)) func(*dataplane.HTTPRule) {
	return func(r *dataplane.HTTPRule) {
		if r.Retry == nil {
			return
		}
		r.Retry = r.Retry.DeepCopy()
		f(r.Retry)
	}
}

// everyStatus5xx lists 500 to 599: a gateway that retries all of them
// ignores which codes the stanza lists.
func everyStatus5xx() []gwv1.HTTPRouteRetryStatusCode {
	var out []gwv1.HTTPRouteRetryStatusCode
	for c := 500; c <= 599; c++ {
		out = append(out, gwv1.HTTPRouteRetryStatusCode(c))
	}
	return out
}

// requestTimeoutPerAttempt turns a retried rule's timeouts.request into a
// per-attempt bound: the request budget no longer covers the retries.
func requestTimeoutPerAttempt(r *dataplane.HTTPRule) {
	if r.Retry == nil || r.Timeouts == nil || r.Timeouts.Request == nil {
		return
	}
	t := r.Timeouts.DeepCopy()
	t.BackendRequest, t.Request = t.Request, nil
	r.Timeouts = t
}

// ignoreBackendTimeout drops a rule's timeouts.backendRequest: attempts
// are bounded by timeouts.request alone.
func ignoreBackendTimeout(r *dataplane.HTTPRule) {
	if r.Timeouts == nil || r.Timeouts.BackendRequest == nil {
		return
	}
	t := r.Timeouts.DeepCopy()
	t.BackendRequest = nil
	r.Timeouts = t
}

// noBackoff sets a retry stanza's backoff to 0s: retries start at once.
func noBackoff(r *gwv1.HTTPRouteRetry) {
	zero := gwv1.Duration("0s")
	r.Backoff = &zero
}

// negativeCase is one broken reference gateway: the tests that must fail
// against it and the tests, of other behaviours, that must still pass.
type negativeCase struct {
	breakage   string
	fail, pass []string
}

// TestHTTPResilienceTestsCanFail runs gatecheck's HTTPRoute retry and
// timeout tests against the healthy reference gateway, where all pass, and
// against one broken in each behaviour they check, where the tests of that
// behaviour fail and tests of other behaviours still pass.
func TestHTTPResilienceTestsCanFail(t *testing.T) {
	t.Parallel()
	all := []string{retryCodes, retryBackoff, retryBackendTimeout, retryConnection, retryBudget, retryBody, routeTimeouts}
	cases := []negativeCase{
		{breakage: negative.Healthy, pass: all},
		{
			breakage: "http-retries-off",
			fail:     []string{retryCodes, retryBackoff, retryBackendTimeout, retryConnection, retryBudget, retryBody},
			pass:     []string{routeTimeouts},
		},
		{
			breakage: "http-retry-backoff-ignored",
			fail:     []string{retryBackoff},
			pass:     []string{retryCodes, retryConnection, routeTimeouts},
		},
		{
			breakage: "http-retry-codes-ignored",
			fail:     []string{retryCodes},
			pass:     []string{retryConnection, retryBackendTimeout, routeTimeouts},
		},
		{
			breakage: "http-retry-every-5xx",
			fail:     []string{retryCodes},
			pass:     []string{retryBackoff, retryBody, routeTimeouts},
		},
		{
			breakage: "http-backend-timeout-ignored",
			fail:     []string{retryBackendTimeout, routeTimeouts},
			pass:     []string{retryCodes, retryBackoff, retryBudget},
		},
		{
			breakage: "http-request-timeout-per-attempt",
			fail:     []string{retryBudget},
			pass:     []string{retryCodes, routeTimeouts},
		},
	}
	for _, tc := range cases {
		t.Run(tc.breakage, func(t *testing.T) {
			t.Parallel()
			got := negative.Run(t, "TestNegativeHelper", tc.breakage, append(append([]string(nil), tc.fail...), tc.pass...)...)
			for _, name := range tc.fail {
				if got[name] != reports.Fail {
					t.Errorf("%s: %s = %q, want fail", tc.breakage, name, got[name])
				}
			}
			for _, name := range tc.pass {
				if got[name] != reports.Pass {
					t.Errorf("%s: %s = %q, want pass", tc.breakage, name, got[name])
				}
			}
		})
	}
}
