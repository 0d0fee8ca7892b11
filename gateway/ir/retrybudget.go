package ir

import "time"

// RetryBudget is the retryConstraint of the XBackendTrafficPolicy that
// targets a backend's Service, with the API's defaults applied.
type RetryBudget struct {
	// Key names the budget: every backendRef with the same Key draws on
	// one budget. The controller sets it to the Service's
	// "namespace/name", so that every route to the Service, on any port,
	// shares it.
	Key string
	// Percent is budget.percent: the most retries may make up of the
	// requests sent to the backend over Interval, retries included (0 to
	// 100).
	Percent int
	// Interval is budget.interval: the sliding window over which requests
	// and retries are counted.
	Interval time.Duration
	// MinRetries per MinInterval is minRetryRate: retries allowed whatever
	// the percentage says, so that a backend with little traffic can
	// still be retried. MinRetries 0 allows none.
	MinRetries  int
	MinInterval time.Duration
}
