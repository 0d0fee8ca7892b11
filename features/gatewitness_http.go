package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// Features of the GATEWITNESS-HTTP-RESILIENCE profile: HTTPRoute retries
// (GEP-1731) and timeouts (GEP-1742). Where the GEPs leave a choice, the
// portable feature accepts every answer the text allows, and a finer
// feature pins the stricter one.
const (
	// SupportHTTPRouteRetryCodes: a rule's retry.codes is honoured exactly;
	// listed codes are retried and other codes are not. gatewitness's own
	// feature in v1.6; from v1.7 upstream's, which names retries on status
	// codes so (releases.go).
	SupportHTTPRouteRetryCodes FeatureName = "HTTPRouteRetryCodes"
	// SupportHTTPRouteRetryBackoff: consecutive attempts are at least
	// retry.backoff apart, as measured by the backend.
	SupportHTTPRouteRetryBackoff FeatureName = "HTTPRouteRetryBackoff"
	// SupportHTTPRouteRetryWithRequestTimeout: timeouts.request bounds the
	// whole retried exchange, all attempts included.
	SupportHTTPRouteRetryWithRequestTimeout FeatureName = "HTTPRouteRetryWithRequestTimeout"
	// SupportHTTPRouteRetryConnectionErrorAttempts: attempts that fail
	// without response headers are retried, as the backend's ledger counts
	// them, with the failing attempt on a fresh connection, where no
	// transport's own resend can stand in for the retry.
	SupportHTTPRouteRetryConnectionErrorAttempts FeatureName = "HTTPRouteRetryConnectionErrorAttempts"
	// SupportHTTPRouteRetryRefusedToOtherEndpoint: the retry of an attempt
	// whose connection an endpoint refused goes to another endpoint of the
	// backend. GEP-1731 asks for the retry, not for another endpoint.
	SupportHTTPRouteRetryRefusedToOtherEndpoint FeatureName = "HTTPRouteRetryRefusedToOtherEndpoint"
	// SupportHTTPRouteRetryCancelsTimedOutAttempt: an attempt that reaches
	// timeouts.backendRequest is cancelled then, as the backend sees it,
	// and retried.
	SupportHTTPRouteRetryCancelsTimedOutAttempt FeatureName = "HTTPRouteRetryCancelsTimedOutAttempt"
	// SupportHTTPRouteRetryStreamReset: an attempt whose HTTP/2 stream the
	// backend resets before the response headers is retried, as GEP-1731's
	// "SHOULD retry on connection errors (disconnect, reset, ...)" reads
	// for a backend that speaks HTTP/2.
	SupportHTTPRouteRetryStreamReset FeatureName = "HTTPRouteRetryStreamReset"
	// SupportHTTPRouteRetryNonIdempotent: requests with a body and a
	// non-idempotent method (POST) are retried too, with the body replayed.
	// GEP-1731 does not ask for it (nginx, for one, does not by default).
	SupportHTTPRouteRetryNonIdempotent FeatureName = "HTTPRouteRetryNonIdempotent"
	// SupportHTTPRouteTimeoutDeadlines: timeouts.request and
	// timeouts.backendRequest are deadlines over the whole response, not
	// inactivity timers; 0s disables them.
	SupportHTTPRouteTimeoutDeadlines FeatureName = "HTTPRouteTimeoutDeadlines"
	// SupportHTTPRouteRetryLastStatus: when every attempt allowed failed
	// with a status, the client gets the backend's own last response.
	SupportHTTPRouteRetryLastStatus FeatureName = "HTTPRouteRetryLastStatus"
	// SupportHTTPRouteTimeout504: an expired timeouts.request or
	// timeouts.backendRequest is answered 504 Gateway Timeout.
	SupportHTTPRouteTimeout504 FeatureName = "HTTPRouteTimeout504"
)

// httpResilienceFeatures are the features of GATEWITNESS-HTTP-RESILIENCE.
var httpResilienceFeatures = []Feature{
	// Registered only when the linked release does not define it (v1.6).
	{
		Name: SupportHTTPRouteRetryCodes, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Description: "Retries exactly the HTTP status codes listed in retry.codes and no others.",
	},
	// Registered only when the linked release does not define it (v1.7
	// dropped it); in v1.6 it is upstream's, in the profile's Extended.
	{
		Name: SupportHTTPRouteRetryBackendTimeout, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn:   []FeatureName{gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteBackendTimeout},
		Description: "Retries an attempt that timeouts.backendRequest cut, like a failed one.",
	},
	{
		Name: SupportHTTPRouteRetryBackoff, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Description: "Waits at least retry.backoff between attempts, as the backend sees them.",
	},
	{
		Name: SupportHTTPRouteRetryWithRequestTimeout, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteRequestTimeout},
		Description: "Ends a retried request when timeouts.request expires, whatever attempt is in flight, and cancels that attempt.",
	},
	{
		Name: SupportHTTPRouteRetryConnectionErrorAttempts, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteRetryConnectionError},
		Description: "Retries an attempt reset or closed before its response headers, as the backend's ledger counts attempts: the " +
			"failing attempt is on a fresh connection, so no transport's own resend can stand in for the retry.",
	},
	{
		Name: SupportHTTPRouteRetryRefusedToOtherEndpoint, Channels: standardFromV17, Level: LevelImplementationSpecific, GEP: 1731,
		DependsOn: []FeatureName{SupportHTTPRouteRetryConnectionErrorAttempts},
		Description: "Sends the retry of a connection an endpoint refused to another endpoint of the backend, so that every request to a " +
			"Service with one refusing endpoint succeeds (GEP-1731 asks for the retry, not for another endpoint).",
	},
	{
		Name: SupportHTTPRouteRetryCancelsTimedOutAttempt, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetryBackendTimeout},
		Description: "Cancels an attempt when timeouts.backendRequest expires, as the backend sees it, and retries it.",
	},
	{
		Name: SupportHTTPRouteRetryStreamReset, Channels: standardFromV17, Level: LevelExtended, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteRetryConnectionError, gwfeatures.SupportHTTPRouteBackendProtocolH2C},
		Description: "Retries an attempt whose HTTP/2 stream the backend reset (RST_STREAM) before the response headers.",
	},
	{
		Name: SupportHTTPRouteRetryNonIdempotent, Channels: standardFromV17, Level: LevelImplementationSpecific, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Description: "Retries non-idempotent requests (a POST with a body) too, replaying the same body on every attempt.",
	},
	{
		Name: SupportHTTPRouteTimeoutDeadlines, Channels: standardInEveryRelease, Level: LevelExtended, GEP: 1742,
		DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteRequestTimeout, gwfeatures.SupportHTTPRouteBackendTimeout},
		Description: "Ends an exchange at timeouts.request or timeouts.backendRequest even while its response keeps flowing (deadlines, " +
			"not inactivity timers), cancels the backend's attempt, and lets 0s disable both.",
	},
	{
		Name: SupportHTTPRouteRetryLastStatus, Channels: standardFromV17, Level: LevelImplementationSpecific, GEP: 1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Description: "After the last allowed attempt failed with a status, relays the backend's own last response rather than an error of the gateway's.",
	},
	{
		Name: SupportHTTPRouteTimeout504, Channels: standardInEveryRelease, Level: LevelImplementationSpecific, GEP: 1742,
		DependsOn:   []FeatureName{gwfeatures.SupportHTTPRouteRequestTimeout, gwfeatures.SupportHTTPRouteBackendTimeout},
		Description: "Answers an expired timeouts.request or timeouts.backendRequest with 504 Gateway Timeout, not 408 or another error.",
	},
}
