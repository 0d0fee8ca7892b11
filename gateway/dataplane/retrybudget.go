package dataplane

// Retry budgets (GEP-3388): XBackendTrafficPolicy.spec.retryConstraint
// bounds the share of a backend's requests that may be retries.
// docs/semantics/retry-budgets.md gives the GEP sentence behind each
// choice made here.

import (
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// budgetSlots is the number of slots a budget's window is counted in: a
// request leaves the window between Interval and Interval*(1+1/budgetSlots)
// after it was made. The state of a budget is a fixed size whatever the
// traffic.
const budgetSlots = 20

// budgetSlot counts the requests and retries of one slot of the window.
type budgetSlot struct {
	index             int64 // the slot's start, in slot durations since the Unix epoch
	requests, retries int
}

// retryBudget is the state of one budget. It outlives snapshots: a new
// snapshot with the same Key keeps counting where the last one left off.
type retryBudget struct {
	mu       sync.Mutex
	slotDur  time.Duration
	slots    [budgetSlots]budgetSlot
	tokens   float64 // minRetryRate's bucket: retries allowed beyond the percentage
	tokensAt time.Time
	minRate  [2]int64 // the MinRetries and MinInterval the bucket was filled for
}

// budgets holds the state of every retry budget by Key.
type budgets struct {
	mu sync.Mutex
	m  map[string]*retryBudget
}

// get returns the state of the budget named key, creating it.
func (bs *budgets) get(key string) *retryBudget {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.m == nil {
		bs.m = map[string]*retryBudget{}
	}
	b := bs.m[key]
	if b == nil {
		b = &retryBudget{}
		bs.m[key] = b
	}
	return b
}

// prune forgets the budgets whose keys are not in keep, so that state is
// held only for the Services a snapshot has budgets for.
func (bs *budgets) prune(keep map[string]bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for k := range bs.m {
		if !keep[k] {
			delete(bs.m, k)
		}
	}
}

// slot returns the slot of now under cfg, resetting the window when the
// interval changed.
func (b *retryBudget) slot(now time.Time, cfg *ir.RetryBudget) *budgetSlot {
	d := max(cfg.Interval/budgetSlots, time.Millisecond)
	if d != b.slotDur {
		b.slotDur = d
		b.slots = [budgetSlots]budgetSlot{}
	}
	idx := now.UnixNano() / int64(d)
	s := &b.slots[idx%budgetSlots]
	if s.index != idx {
		*s = budgetSlot{index: idx}
	}
	return s
}

// window returns the requests and retries counted over the last Interval.
func (b *retryBudget) window(now time.Time, cfg *ir.RetryBudget) (requests, retries int) {
	cur := b.slot(now, cfg).index
	for _, s := range b.slots {
		if s.index > cur-budgetSlots && s.index <= cur {
			requests += s.requests
			retries += s.retries
		}
	}
	return requests, retries
}

// request counts a first attempt sent to the backend.
func (b *retryBudget) request(now time.Time, cfg *ir.RetryBudget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slot(now, cfg).requests++
}

// allowRetry reports whether one more retry fits the budget, and if so
// counts it (as a request and a retry), so that concurrent retries cannot
// all take the last place. A retry fits when minRetryRate's bucket has a
// token, or when with it the retries of the window stay within Percent of
// the window's requests. The bucket holds up to MinRetries tokens and
// refills at MinRetries per MinInterval; every retry takes a token while
// there is one, so at high traffic the minimum is part of the percentage,
// not added to it.
func (b *retryBudget) allowRetry(now time.Time, cfg *ir.RetryBudget) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.takeToken(now, cfg) {
		b.count(now, cfg)
		return true
	}
	requests, retries := b.window(now, cfg)
	if (retries+1)*100 > cfg.Percent*(requests+1) {
		return false
	}
	b.count(now, cfg)
	return true
}

func (b *retryBudget) count(now time.Time, cfg *ir.RetryBudget) {
	s := b.slot(now, cfg)
	s.requests++
	s.retries++
}

// takeToken refills minRetryRate's bucket for the time since the last
// refill and takes a token if there is one.
func (b *retryBudget) takeToken(now time.Time, cfg *ir.RetryBudget) bool {
	if cfg.MinRetries <= 0 || cfg.MinInterval <= 0 {
		return false
	}
	rate := [2]int64{int64(cfg.MinRetries), int64(cfg.MinInterval)}
	if rate != b.minRate || b.tokensAt.IsZero() {
		b.minRate, b.tokens, b.tokensAt = rate, float64(cfg.MinRetries), now
	}
	if elapsed := now.Sub(b.tokensAt); elapsed > 0 {
		b.tokens = min(float64(cfg.MinRetries), b.tokens+float64(cfg.MinRetries)*float64(elapsed)/float64(cfg.MinInterval))
		b.tokensAt = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// budgetKeys returns the keys of the retry budgets cfg's backends use.
func budgetKeys(cfg *ir.Config) map[string]bool {
	keys := map[string]bool{}
	if cfg == nil {
		return keys
	}
	for gi := range cfg.Gateways {
		cfg.Gateways[gi].EachRequestBackend(func(b *ir.Backend) {
			if b.RetryBudget != nil {
				keys[b.RetryBudget.Key] = true
			}
		})
	}
	return keys
}
