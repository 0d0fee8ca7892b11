package tests

// Retry budgets (GEP-3388): XBackendTrafficPolicy.spec.retryConstraint on
// a backend Service. Every test here makes the backend fail the first
// attempt of each request with a status the route retries once, so that
// each request either is retried (the backend's ledger shows 500 then
// 200, and the client gets 200) or has its retry refused by the budget
// (the ledger shows the one 500, and the client must get 503: "After the
// retry budget has been exceeded, additional retries to the backend MUST
// return a 503 response to the client"). The failing status is 500, not
// 503, so that a gateway relaying the backend's answer cannot pass for
// one that refused the retry.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// budgetFault makes the backend fail a request's first attempt with 500,
// which the routes of the retry budget tests retry once.
const budgetFault = "fail=1;status=500"

// budgetMinRetries is the minRetryRate.count of the manifests whose
// budget.percent is 0: per minRetryRate.interval (1h), that many retries
// and no more. A test accepts up to twice as many, for an implementation
// that counts in fixed windows and whose window turned over during the
// test.
const budgetMinRetries = 3

// budgetReplicaRoom is how many replicas' minRetryRate, twice over (fixed
// windows that turned over), BackendRetryBudgetPerBackend lets route 1
// retry before its row of refusals: past that a gateway is taken to
// ignore the budget.
const budgetReplicaRoom = 5

// budgetOutcome is what one request under a retry budget came to.
type budgetOutcome int

const (
	budgetRetried budgetOutcome = iota // 200 after a retry: the ledger shows 500, 200
	budgetRefused                      // 503 with no retry: the ledger shows 500
)

// budgetRequest sends one request whose first attempt fails, and says
// whether it was retried or refused; anything else is an error that says
// what happened.
func budgetRequest(t *testing.T, c *testclient.Route, path string) (budgetOutcome, string, error) {
	t.Helper()
	x := c.Do(t, testclient.Request{Path: path, Fault: budgetFault})
	if x.Err != nil {
		return 0, "", fmt.Errorf("%s: %v", path, x)
	}
	e := c.SettledLedger(t, x.ID, settleWithin())
	var got []string
	for _, a := range e.Attempts {
		got = append(got, fmt.Sprint(a.Status))
	}
	ledger := strings.Join(got, ",")
	switch {
	case x.Status == http.StatusOK && ledger == "500,200" && e.Dropped == 0:
		return budgetRetried, ledger, nil
	case x.Status == http.StatusServiceUnavailable && ledger == "500" && e.Dropped == 0:
		return budgetRefused, ledger, nil
	}
	return 0, ledger, fmt.Errorf("%s: %v, and the backend answered [%s] (%s); want 200 after one retry (the backend answering 500, 200) "+
		"or, when the retry budget refuses the retry, 503 after the one attempt (the backend answering 500)",
		path, x, ledger, testclient.Summary(e))
}

// BackendRetryBudgetMinRetryRate checks minRetryRate: with budget.percent
// 0 the percentage allows no retry at all, and minRetryRate (3 per hour)
// is what still allows some. Of ten requests whose first attempts fail,
// at least 3 must be retried (the minimum applies whatever the percentage
// says) and at most 6 (3 more only for fixed windows that turned over),
// and the others must get 503 without a second attempt.
var BackendRetryBudgetMinRetryRate = suite.ConformanceTest{
	ShortName: "BackendRetryBudgetMinRetryRate",
	Description: "With an XBackendTrafficPolicy of budget.percent 0 and minRetryRate 3 per hour on a Service, 3 of 10 failing requests are " +
		"retried (at most 6 for fixed windows) and the others get 503 after one attempt, as the backend's ledger shows.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		features.SupportBackendRetryBudgetMinRetryRate,
	},
	Manifests: []string{ManifestPrefix + "backend-retry-budget-min-rate.yaml"},
	Parallel:  true,
	Test:      testBackendRetryBudgetMinRetryRate,
}

func testBackendRetryBudgetMinRetryRate(t *testing.T, s *suite.ConformanceTestSuite) {
	const (
		host     = "retry-budget-min-rate.gatewitness.test"
		backend  = "gatewitness-retry-budget-min-rate"
		requests = 10
	)
	gwAddr := attachRoutes(t, s, host, "/ready", backend, backend)
	c := newRouteClient(t, s, gwAddr, host)
	var outcomes []string
	retried := 0
	for i := range requests {
		o, _, err := budgetRequest(t, c, "/fail")
		if err != nil {
			t.Fatalf("request %d of %d: %v", i+1, requests, err)
		}
		if o == budgetRetried {
			retried++
			outcomes = append(outcomes, "retried")
		} else {
			outcomes = append(outcomes, "503")
		}
	}
	observe.Record(t, "outcomes", strings.Join(outcomes, " "))
	observe.Record(t, "retried", retried)
	switch {
	case retried < budgetMinRetries:
		t.Errorf("%d of %d requests were retried (%s); minRetryRate allows %d per hour whatever budget.percent (0) says",
			retried, requests, strings.Join(outcomes, " "), budgetMinRetries)
	case retried > 2*budgetMinRetries:
		t.Errorf("%d of %d requests were retried (%s); budget.percent 0 allows none beyond minRetryRate's %d per hour "+
			"(twice that for fixed windows that turned over)", retried, requests, strings.Join(outcomes, " "), budgetMinRetries)
	}
}

// BackendRetryBudgetPerBackend checks that the budget belongs to the
// Service: two HTTPRoutes send to one Service, a third to another
// Service with a policy of its own, all with budget.percent 0 and
// minRetryRate 3 per hour. Once the first route's retries are refused,
// the second route's are too (one budget), while the other Service's
// route still gets its 3.
//
// A budget is kept by each client that applies it (GEP-3388's
// minRetryRate: "there can be any number of clients which are applying
// this setting locally"), and a data plane of several replicas is several
// clients: each new connection reaches one of them, with a budget of its
// own. So route 1's requests, each on a connection of its own, go on
// until servedInARow of them in a row are refused, which crosses the
// replicas as the evidence of a step does (evidence.go): then every
// replica has spent the Service's budget, and route 2's requests find it
// spent wherever they land. At least 3 are retried before the first
// refusal (the one replica that refused had its 3); how many more is the
// number of replicas', which MinRetryRate's bound does not hold here.
var BackendRetryBudgetPerBackend = suite.ConformanceTest{
	ShortName: "BackendRetryBudgetPerBackend",
	Description: "Two HTTPRoutes to one Service draw on the one retry budget of its XBackendTrafficPolicy: after the first route used it " +
		"up, the second gets 503 without a retry; a route to another Service still has that Service's budget.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportHTTPRouteRetry,
		features.SupportBackendRetryBudgetMinRetryRate,
		features.SupportBackendRetryBudgetPerBackend,
	},
	Manifests: []string{ManifestPrefix + "backend-retry-budget-per-backend.yaml"},
	Parallel:  true,
	Test:      testBackendRetryBudgetPerBackend,
}

func testBackendRetryBudgetPerBackend(t *testing.T, s *suite.ConformanceTestSuite) {
	const (
		sharedHost = "retry-budget-per-backend.gatewitness.test"
		otherHost  = "retry-budget-other.gatewitness.test"
		shared     = "gatewitness-retry-budget-shared"
		other      = "gatewitness-retry-budget-other"
	)
	gwAddr := attachRoutes(t, s, sharedHost, "/ready", shared,
		"gatewitness-retry-budget-route-1", "gatewitness-retry-budget-route-2", "gatewitness-retry-budget-route-3")
	attachRoutes(t, s, otherHost, "/ready", other, "gatewitness-retry-budget-route-3")
	sharedClient := newRouteClient(t, s, gwAddr, sharedHost)
	otherClient := newRouteClient(t, s, gwAddr, otherHost)

	// Use the shared Service's budget up through route 1, on every
	// replica: its requests go on until servedInARow in a row are
	// refused.
	need := servedInARow(s)
	retried, firstRefusal, inARow := 0, -1, 0
	for sent := 1; inARow < need; sent++ {
		if retried > budgetReplicaRoom*2*budgetMinRetries {
			t.Fatalf("route 1: %d of %d requests retried, and never %d refused in a row; budget.percent 0 allows none beyond minRetryRate's %d per hour "+
				"(on each replica of the data plane: twice that for fixed windows, for up to %d replicas)",
				retried, sent-1, need, budgetMinRetries, budgetReplicaRoom)
		}
		o, _, err := budgetRequest(t, sharedClient, "/route-1")
		if err != nil {
			t.Fatalf("route 1, request %d: %v", sent, err)
		}
		if o == budgetRetried {
			retried++
			inARow = 0
			continue
		}
		if firstRefusal < 0 {
			firstRefusal = retried
			observe.Record(t, "route-1-retried-before-refusal", firstRefusal)
			if firstRefusal < budgetMinRetries {
				t.Fatalf("route 1: a retry was refused after %d retried; minRetryRate allows %d per hour", firstRefusal, budgetMinRetries)
			}
		}
		inARow++
	}
	observe.Record(t, "route-1-retried", retried)
	// Route 2 sends to the same Service: its budget is spent.
	for i := range 2 {
		o, ledger, err := budgetRequest(t, sharedClient, "/route-2")
		if err != nil {
			t.Fatalf("route 2, request %d: %v", i+1, err)
		}
		observe.Record(t, fmt.Sprintf("route-2-ledger[%d]", i+1), ledger)
		if o != budgetRefused {
			t.Fatalf("route 2, request %d: retried after route 1's requests were refused %d times in a row, the budget of Service %s spent; "+
				"the budget belongs to the Service, not to each route", i+1, need, shared)
		}
	}
	// Route 3 sends to another Service, with a budget of its own.
	for i := range budgetMinRetries {
		o, ledger, err := budgetRequest(t, otherClient, "/route-3")
		if err != nil {
			t.Fatalf("route 3, request %d: %v", i+1, err)
		}
		observe.Record(t, fmt.Sprintf("route-3-ledger[%d]", i+1), ledger)
		if o != budgetRetried {
			t.Fatalf("route 3, request %d: the retry was refused, though Service %s has a budget of its own (minRetryRate %d per hour) "+
				"and the spent budget is Service %s's", i+1, other, budgetMinRetries, shared)
		}
	}
}
