package tests

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/periodic"
	"fortio.org/fortio/stats"
	"fortio.org/log"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatecheck/gatecheck/conformance/observe"
	"github.com/gatecheck/gatecheck/echo-backend/fault"
	"github.com/gatecheck/gatecheck/features"
)

// The load of BackendRetryBudgetUnderLoad: a fixed rate, paced by fortio's
// periodic runner, for a fixed number of requests. 40 requests a second
// for 6 seconds is six budget intervals of 1s, little enough for a loaded
// two-core machine running the gateway and the backend in the same
// process under the race detector.
const (
	budgetLoadQPS      = 40
	budgetLoadRequests = 240
	budgetLoadThreads  = 8
	// budgetPercent is the manifest's budget.percent.
	budgetPercent = 20
	// budgetRatioSlack widens the accepted share of retried requests on
	// each side: the first interval starts with an empty window (a budget
	// of a few requests allows no retry yet), and an implementation that
	// counts in fixed windows starts each window so. Both cost a few
	// retries in each interval; neither comes near what a gateway that
	// ignores the budget (every request retried) or one that ignores the
	// percentage (1 retry an hour) does.
	budgetRatioSlack = 0.05
)

// BackendRetryBudgetUnderLoad checks budget.percent under sustained load:
// fortio's periodic runner sends 240 requests at 40 a second, each of
// whose first attempts the backend fails with 500, which the route
// retries once; the policy allows 20% over a 1s window, and minRetryRate
// is set to its least (1 an hour). Every request must be either retried
// (200, the ledger showing 500 then 200) or refused (503, the ledger
// showing the one 500), and the share retried must lie between 20% minus
// a slack and 25% (20% of the requests including the retries) plus it.
// The answers must come in time: a refused retry is answered at once, a
// retried one after its backoff, so the 99th percentile of the latency
// stays within the timing tolerance.
var BackendRetryBudgetUnderLoad = suite.ConformanceTest{
	ShortName: "BackendRetryBudgetUnderLoad",
	Description: "Under 40 requests a second whose first attempts fail, an XBackendTrafficPolicy budget of 20% over 1s lets 20% to 25% " +
		"of the requests be retried and answers the others 503 after one attempt, as the backend's ledger and fortio's histogram show.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteRetry,
		features.SupportBackendRetryBudget,
	},
	Manifests: []string{"gatecheck/backend-retry-budget-load.yaml"},
	Parallel:  true,
	Test:      testRetryBudgetUnderLoad,
}

// loadRequest is one request of a load run and what it came to.
type loadRequest struct {
	id     string
	status int // 0: no response
	err    error
}

// loadRunner sends the requests of a load run: a fortio periodic.Runnable
// whose every Run sends the next request, with an id of the run's own
// sequence, so that each can be found in the backend's ledger.
type loadRunner struct {
	c      *routeClient
	path   string
	prefix string
	seq    *atomic.Int64
	mu     *sync.Mutex
	sent   *[]loadRequest
}

// Run sends one request; fortio counts it a success when it got 200.
func (r *loadRunner) Run(ctx context.Context, _ periodic.ThreadID) (bool, string) {
	lr := loadRequest{id: fmt.Sprintf("%s.%d", r.prefix, r.seq.Add(1))}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := url.URL{Scheme: "http", Host: r.c.gwAddr, Path: r.path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err == nil {
		req.Host = r.c.host
		req.Header.Set(fault.IDHeaderName, lr.id)
		req.Header.Set(fault.HeaderName, budgetFault)
		var resp *http.Response
		if resp, err = r.c.client.Do(req); err == nil {
			lr.status = resp.StatusCode
			_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
			resp.Body.Close()
		}
	}
	lr.err = err
	r.mu.Lock()
	*r.sent = append(*r.sent, lr)
	r.mu.Unlock()
	return lr.status == http.StatusOK, ""
}

var quietFortio sync.Once

func testRetryBudgetUnderLoad(t *testing.T, s *suite.ConformanceTestSuite) {
	const (
		host    = "retry-budget-load.gatecheck.test"
		backend = "gatecheck-retry-budget-load"
	)
	gwAddr := attachRoutes(t, s, host, "/ready", backend, backend)
	c := newRouteClient(t, s, gwAddr, host)
	quietFortio.Do(func() { log.SetLogLevelQuiet(log.Warning) }) // fortio logs each run at Info

	var (
		seq  atomic.Int64
		mu   sync.Mutex
		sent []loadRequest
	)
	runner := &loadRunner{c: c, path: "/fail", prefix: newHTTPRequestID(t), seq: &seq, mu: &mu, sent: &sent}
	opts := periodic.RunnerOptions{
		QPS:         budgetLoadQPS,
		Exactly:     budgetLoadRequests,
		NumThreads:  budgetLoadThreads,
		Percentiles: []float64{50, 99},
		Out:         io.Discard,
	}
	// fortio takes the options over (and clears their runners): the
	// runners go to the runner it made of them.
	pr := periodic.NewPeriodicRunner(&opts)
	pr.Options().MakeRunners(runner)
	res := pr.Run()
	h := res.DurationHistogram
	p50, p99 := percentile(h, 50), percentile(h, 99)
	observe.Record(t, "requests", len(sent))
	observe.Record(t, "actual-qps", fmt.Sprintf("%.1f", res.ActualQPS))
	observe.Record(t, "p50", p50.Round(time.Millisecond))
	observe.Record(t, "p99", p99.Round(time.Millisecond))

	var retried, refused int
	var wrong []string
	for _, lr := range sent {
		if lr.err != nil {
			wrong = append(wrong, fmt.Sprintf("%s: %v", lr.id, lr.err))
			continue
		}
		e := c.settledLedger(lr.id)
		var got []string
		for _, a := range e.Attempts {
			got = append(got, fmt.Sprint(a.Status))
		}
		switch ledger := strings.Join(got, ","); {
		case lr.status == http.StatusOK && ledger == "500,200" && e.Dropped == 0:
			retried++
		case lr.status == http.StatusServiceUnavailable && ledger == "500" && e.Dropped == 0:
			refused++
		default:
			wrong = append(wrong, fmt.Sprintf("%s: status %d, the backend answered [%s]", lr.id, lr.status, ledger))
		}
	}
	share := float64(retried) / float64(max(len(sent), 1))
	observe.Record(t, "retried", retried)
	observe.Record(t, "refused-503", refused)
	observe.Record(t, "retried-share", fmt.Sprintf("%.3f", share))
	if len(sent) != budgetLoadRequests {
		t.Errorf("fortio sent %d requests, want %d", len(sent), budgetLoadRequests)
	}
	if len(wrong) > 0 {
		t.Errorf("%d of %d requests were neither retried (200, the backend answering 500, 200) nor refused by the budget "+
			"(503, the backend answering 500 once), e.g. %s", len(wrong), len(sent), strings.Join(wrong[:min(len(wrong), 3)], "; "))
	}
	// Reading "percent of active requests" as of the requests including
	// retries allows retried/requests up to p/(100-p); as of the
	// client's requests alone, up to p/100. Both are accepted.
	p := float64(budgetPercent) / 100
	lo, hi := p-budgetRatioSlack, p/(1-p)+budgetRatioSlack+1/float64(budgetLoadRequests) // +1: minRetryRate's one an hour
	if share < lo || share > hi {
		t.Errorf("%d of %d requests (%.3f) were retried; with budget.percent %d over 1s want a share in [%.3f, %.3f] "+
			"(%d%% of the requests, or of the requests and retries, within %.2f)", retried, len(sent), share, budgetPercent, lo, hi,
			budgetPercent, budgetRatioSlack)
	}
	if p99 > TimingTolerance() {
		t.Errorf("the 99th percentile of the latency is %v (p50 %v); want within the timing tolerance %v: a refused retry is answered at once, "+
			"a retried request after its 10ms backoff", p99, p50, TimingTolerance())
	}
}

// percentile returns fortio's estimate of the p-th percentile of h.
func percentile(h *stats.HistogramData, p float64) time.Duration {
	for _, pc := range h.Percentiles {
		if pc.Percentile == p {
			return time.Duration(pc.Value * float64(time.Second))
		}
	}
	return time.Duration(math.MaxInt64)
}
