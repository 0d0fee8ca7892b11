package features

// Features of the GATEWITNESS-RETRY-BUDGETS profile: retry budgets
// (GEP-3388), XBackendTrafficPolicy.spec.retryConstraint on a backend
// Service, which bounds the retries that HTTPRoute retry stanzas
// (GEP-1731) may send it. Upstream v1.6.3 names no feature for them. See
// docs/semantics/retry-budgets.md.
const (
	// SupportBackendRetryBudget: under sustained load, retries to a
	// Service make up no more of its requests over budget.interval than
	// budget.percent allows (and, while within it, are made); a request
	// whose retry the budget refused gets 503.
	SupportBackendRetryBudget FeatureName = "BackendRetryBudget"
	// SupportBackendRetryBudgetMinRetryRate: minRetryRate's count of
	// retries per interval is allowed even when budget.percent allows
	// none, and retries beyond it then get 503.
	SupportBackendRetryBudgetMinRetryRate FeatureName = "BackendRetryBudgetMinRetryRate"
	// SupportBackendRetryBudgetPerBackend: every route to a Service draws
	// on the Service's one budget, and another Service's budget is its
	// own.
	SupportBackendRetryBudgetPerBackend FeatureName = "BackendRetryBudgetPerBackend"
)

// retryBudgetFeatures are the features of GATEWITNESS-RETRY-BUDGETS.
var retryBudgetFeatures = []Feature{
	{
		Name: SupportBackendRetryBudget, Channels: experimentalInEveryRelease, Level: LevelExtended, GEP: 3388,
		DependsOn: []FeatureName{SupportHTTPRouteRetry},
		Description: "Under sustained load, retries to a Service stay within XBackendTrafficPolicy retryConstraint.budget.percent of its " +
			"requests over budget.interval, are made while within it, and a request whose retry was refused gets 503.",
	},
	{
		Name: SupportBackendRetryBudgetMinRetryRate, Channels: experimentalInEveryRelease, Level: LevelExtended, GEP: 3388,
		DependsOn: []FeatureName{SupportHTTPRouteRetry},
		Description: "Allows retryConstraint.minRetryRate's count of retries per interval to a Service even when budget.percent allows " +
			"none, and answers 503 to the requests whose retries go beyond it.",
	},
	{
		Name: SupportBackendRetryBudgetPerBackend, Channels: experimentalInEveryRelease, Level: LevelExtended, GEP: 3388,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Description: "Counts one retry budget per Service: two routes to one Service share it, and another Service's budget is its own.",
	},
}
