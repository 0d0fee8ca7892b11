package tests

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// RetryBudgetLoad is the load of the retry-budget load tests
// (BackendRetryBudgetUnderLoad and BackendRetryBudgetRetriesWithinBudget):
// the rate and number of requests fortio sends, and how far the share of
// requests retried may stray from what budget.percent allows. They are
// the runner's --retry-budget-load-qps, --retry-budget-load-requests and
// --retry-budget-share-slack options.
type RetryBudgetLoad struct {
	// QPS is the rate, in requests a second.
	QPS int `json:"qps"`
	// Requests is how many requests a load test sends.
	Requests int `json:"requests"`
	// ShareSlack widens the accepted share of requests retried on each
	// side (see BackendRetryBudgetUnderLoad).
	ShareSlack float64 `json:"shareSlack"`
}

// The bounds of RetryBudgetLoad. Each keeps the tests able to tell a
// budget that works from one that does not, whatever the other options:
//   - at fewer than MinRetryBudgetLoadQPS requests a second the 20% budget
//     over 1s allows so few retries an interval (4 at 20/s) that the
//     empty first window and a counting granularity of one request decide
//     the share; above MaxRetryBudgetLoadQPS the eight senders and the
//     gateway measure the machine rather than the budget;
//   - a run covers at least MinRetryBudgetLoadIntervals budget intervals
//     (1s each) and at least MinRetryBudgetLoadRequests requests, so that
//     minRetryRate's 3 retries an hour are at most 2.5% of the requests and
//     a gateway that ignores budget.percent (and retries only those) stays
//     below the share's lower end; shorter runs (60 requests at 20/s, three
//     intervals) were seen to refuse the healthy reference gateway's last
//     retry in BackendRetryBudgetRetriesWithinBudget, and six intervals are
//     what the default load covers; it lasts at most MaxRetryBudgetLoadRun
//     and sends at most MaxRetryBudgetLoadRequests;
//   - ShareSlack is at most MaxRetryBudgetShareSlack, so that the lower end
//     (20% minus the slack) stays above those 2.5%, and the upper end (25%
//     plus the slack and the 2.5%) far below the share of a gateway that
//     ignores the budget (every request retried).
const (
	MinRetryBudgetLoadQPS       = 20
	MaxRetryBudgetLoadQPS       = 400
	MinRetryBudgetLoadRequests  = 120
	MaxRetryBudgetLoadRequests  = 100000
	MinRetryBudgetLoadIntervals = 6
	MaxRetryBudgetLoadRun       = 5 * time.Minute
	MaxRetryBudgetShareSlack    = 0.1
)

// DefaultRetryBudgetLoad returns the load the tests use unless the runner
// sets another: 40 requests a second for 6 seconds (six budget intervals,
// little enough for a loaded two-core machine running the gateway and the
// backend in one process under the race detector), and a slack of 0.05.
func DefaultRetryBudgetLoad() RetryBudgetLoad {
	return RetryBudgetLoad{QPS: 40, Requests: 240, ShareSlack: 0.05}
}

var (
	retryBudgetLoadMu sync.Mutex
	retryBudgetLoad   = DefaultRetryBudgetLoad()
)

// RetryBudgetLoadOptions returns the load the retry-budget load tests use.
func RetryBudgetLoadOptions() RetryBudgetLoad {
	retryBudgetLoadMu.Lock()
	defer retryBudgetLoadMu.Unlock()
	return retryBudgetLoad
}

// SetRetryBudgetLoad sets what RetryBudgetLoadOptions returns. The runner
// calls it before a run; l must pass l.Check.
func SetRetryBudgetLoad(l RetryBudgetLoad) error {
	if err := l.Check(); err != nil {
		return fmt.Errorf("tests: %w", err)
	}
	retryBudgetLoadMu.Lock()
	defer retryBudgetLoadMu.Unlock()
	retryBudgetLoad = l
	return nil
}

// Check reports whether l is an accepted load, with an error per bad
// option naming it (qps, requests, share slack) and its accepted range.
func (l RetryBudgetLoad) Check() error {
	return errors.Join(CheckRetryBudgetLoadQPS(l.QPS), CheckRetryBudgetLoadRequests(l.Requests, l.QPS),
		CheckRetryBudgetShareSlack(l.ShareSlack))
}

// CheckRetryBudgetLoadQPS checks the rate alone.
func CheckRetryBudgetLoadQPS(qps int) error {
	if qps < MinRetryBudgetLoadQPS || qps > MaxRetryBudgetLoadQPS {
		return fmt.Errorf("retry-budget load qps %d is out of range; accepted: requests a second from %d to %d, such as %d",
			qps, MinRetryBudgetLoadQPS, MaxRetryBudgetLoadQPS, DefaultRetryBudgetLoad().QPS)
	}
	return nil
}

// CheckRetryBudgetLoadRequests checks the number of requests at the rate
// qps: at least MinRetryBudgetLoadIntervals seconds' worth and
// MinRetryBudgetLoadRequests, at most MaxRetryBudgetLoadRun's worth and
// MaxRetryBudgetLoadRequests. A qps out of its own range is not judged
// here (CheckRetryBudgetLoadQPS names it).
func CheckRetryBudgetLoadRequests(requests, qps int) error {
	lo, hi, at := MinRetryBudgetLoadRequests, MaxRetryBudgetLoadRequests, ""
	if CheckRetryBudgetLoadQPS(qps) == nil {
		lo = max(lo, MinRetryBudgetLoadIntervals*qps)
		hi = min(hi, int(MaxRetryBudgetLoadRun/time.Second)*qps)
		at = fmt.Sprintf(" at %d a second", qps)
	}
	if requests < lo || requests > hi {
		return fmt.Errorf("retry-budget load requests %d is out of range%s; accepted: a count from %d to %d "+
			"(at least %d budget intervals of 1s and %d requests, at most %v of load and %d requests)",
			requests, at, lo, hi, MinRetryBudgetLoadIntervals, MinRetryBudgetLoadRequests, MaxRetryBudgetLoadRun, MaxRetryBudgetLoadRequests)
	}
	return nil
}

// CheckRetryBudgetShareSlack checks the slack of the retried share.
func CheckRetryBudgetShareSlack(slack float64) error {
	if !(slack >= 0 && slack <= MaxRetryBudgetShareSlack) { // NaN too
		return fmt.Errorf("retry-budget share slack %v is out of range; accepted: a fraction from 0 to %v, such as %v",
			slack, MaxRetryBudgetShareSlack, DefaultRetryBudgetLoad().ShareSlack)
	}
	return nil
}
