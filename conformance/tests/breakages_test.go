package tests_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/negative"
	"github.com/gatewitness/gatewitness/conformance/runner/runnertest"
	"github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
	"github.com/gatewitness/gatewitness/reports"
)

// The ShortNames of gatewitness's tests, as the breakages name them.
var (
	retryCodes          = tests.HTTPRouteRetryCodesAndAttempts.ShortName
	retryBackoff        = tests.HTTPRouteRetryBackoffGaps.ShortName
	retryBackendTimeout = tests.HTTPRouteRetryBackendTimeoutCancels.ShortName
	retryConnection     = tests.HTTPRouteRetryConnectionErrors.ShortName
	retryBudget         = tests.HTTPRouteRetryRequestTimeoutBudget.ShortName
	retryBody           = tests.HTTPRouteRetryBodyReplay.ShortName
	retryStreamReset    = tests.HTTPRouteRetryStreamReset.ShortName
	routeTimeouts       = tests.HTTPRouteTimeoutsWithoutRetry.ShortName

	grpcMaxStream   = tests.GRPCRouteMaxStreamDuration.ShortName
	grpcStrict      = tests.GRPCRouteStrictEnforcement.ShortName
	grpcDeadline    = tests.GRPCRouteMaxStreamDurationDeadlineExceeded.ShortName
	grpcPropagation = tests.GRPCRouteTimeoutPropagation.ShortName
	grpcCancels     = tests.GRPCRouteMaxStreamDurationCancelsBackend.ShortName

	connServer    = tests.ConnectionServerTimeout.ShortName
	connClient    = tests.ConnectionClientTimeout.ShortName
	connTunnel    = tests.ConnectionTunnelTimeout.ShortName
	connServerFin = tests.ConnectionServerFinTimeout.ShortName
	connTLS       = tests.ConnectionTLSInspectDelay.ShortName

	meshHTTP    = tests.MeshProbeHTTP.ShortName
	meshTCP     = tests.MeshProbeTCP.ShortName
	meshGRPC    = tests.MeshProbeGRPC.ShortName
	meshRewrite = tests.MeshProbeRewrite.ShortName

	budgetMinRate    = tests.BackendRetryBudgetMinRetryRate.ShortName
	budgetPerBackend = tests.BackendRetryBudgetPerBackend.ShortName
	budgetUnderLoad  = tests.BackendRetryBudgetUnderLoad.ShortName
	budgetWithin     = tests.BackendRetryBudgetRetriesWithinBudget.ShortName

	ffH1Truncation = tests.FaultFidelityHTTP1Truncation.ShortName
	ffH2Truncation = tests.FaultFidelityHTTP2Truncation.ShortName
	ffOnce         = tests.FaultFidelitySingleAttempt.ShortName
	ffStreamed     = tests.FaultFidelityStreamedResponses.ShortName
	ffGRPCFailure  = tests.FaultFidelityGRPCFailure.ShortName
	ffGRPCStreams  = tests.FaultFidelityGRPCStreaming.ShortName
)

// Profiles, as the breakages name their scope.
const (
	httpProfile   = features.ProfileHTTPResilience
	grpcProfile   = features.ProfileGRPCDeadlines
	connProfile   = features.ProfileConnectionTimeouts
	probeProfile  = features.ProfileMeshProbes
	budgetProfile = features.ProfileRetryBudgets
	ffProfile     = features.ProfileFaultFidelity
)

// breakages are the reference gateways, broken the way real data planes go
// wrong, that gatewitness's tests are checked against (see
// TestEveryGatewitnessTestHasABreakage). Each is checked against every test
// of its Profiles: the tests of the features it Breaks and the tests it
// names in Fails fail, its Skips skip, and the rest pass, for the reason
// Passes gives (or one of their own in Unaffected). A new test costs a
// breakage a line only when the breakage must fail or skip it and breaks
// none of its features already.
var breakages = []negative.Breakage{
	// HTTPRoute retries and timeouts (GEP-1731, GEP-1742).
	{
		Name: "plain-reverse-proxy",
		Models: "a plain httputil.ReverseProxy-style data plane: no retry policy, and a net/http transport that resends an idempotent " +
			"request by itself when a reused keep-alive connection fails; the resend must not pass for a retry",
		Gateway: runnertest.ReferenceGateway{
			MutateConfig: eachHTTPRule(func(r *ir.HTTPRule) { r.Retry = nil }),
			DataPlane:    dataplanetest.Hooks{TransportResends: true},
		},
		// No retries at all: the retry budget's tests, which need retries
		// the budget allows, fail too.
		Profiles: []string{httpProfile, budgetProfile},
		Breaks:   []features.FeatureName{features.SupportHTTPRouteRetry},
		Passes:   "its rule has no retry stanza: it checks timeouts, which this data plane keeps",
	},
	{
		Name: "body-not-held",
		Models: "HAProxy without \"option http-buffer-request\": the first attempt starts when the headers are in, the body is " +
			"streamed to it as it arrives, and a request is retried only if its whole body had arrived before that attempt began to send it",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{BodyNotHeld: true}},
		Profiles: []string{httpProfile},
		Fails:    []string{retryBody},
		Passes:   "its requests have no body, so there is nothing to hold for a retry",
	},
	{
		Name: "retry-same-endpoint",
		Models: "a data plane that picks an endpoint per request, not per attempt, so a retry goes where the failed attempt went, " +
			"and claims HTTPRouteRetryRefusedToOtherEndpoint all the same",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{RetrySameEndpoint: true}},
		Profiles: []string{httpProfile},
		Fails:    []string{retryConnection},
		Passes:   "its backends have one endpoint, so a retry goes where the attempt went anyway",
	},
	{
		Name: "retry-same-endpoint-unclaimed",
		Models: "a data plane that retries on the endpoint of the failed attempt and says so (HTTPRouteRetryRefusedToOtherEndpoint " +
			"not claimed): it retries connection errors as GEP-1731 asks, and passes",
		Gateway:   runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{RetrySameEndpoint: true}},
		Unclaimed: []features.FeatureName{features.SupportHTTPRouteRetryRefusedToOtherEndpoint},
		Profiles:  []string{httpProfile},
		Passes:    "the connection errors GEP-1731 names are retried, on the endpoint that answers; the refused endpoint's case needs the unclaimed feature",
	},
	{
		Name:     "retries-without-backoff",
		Models:   "a data plane that retries at once, ignoring retry.backoff, and claims HTTPRouteRetryBackoff all the same",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(noBackoff))},
		Profiles: []string{httpProfile},
		Fails:    []string{retryBackoff, retryBackendTimeout, retryBudget},
		Passes:   "it counts attempts, codes and bodies, which retries at any spacing get right",
	},
	{
		Name:      "retries-without-backoff-unclaimed",
		Models:    "a data plane that retries at once and says so (HTTPRouteRetryBackoff not claimed): no test may hold the backoff against it",
		Gateway:   runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(noBackoff))},
		Unclaimed: []features.FeatureName{features.SupportHTTPRouteRetryBackoff},
		Profiles:  []string{httpProfile},
		Passes:    "none holds a backoff against a data plane that does not claim HTTPRouteRetryBackoff (the test that needs it skips)",
	},
	{
		Name:    "retry-codes-ignored",
		Models:  "a data plane that silently ignores retry.codes and retries connection errors and timeouts only",
		Gateway: runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(func(r *gwv1.HTTPRouteRetry) { r.Codes = nil }))},
		// The retry budget's tests retry on 500, which this data plane
		// never does, so they fail too.
		Profiles: []string{httpProfile, budgetProfile},
		Fails: []string{retryCodes, retryBackoff, retryBudget, retryBody,
			budgetMinRate, budgetPerBackend, budgetUnderLoad, budgetWithin},
		Passes: "its attempts fail by connection error or timeout, which this data plane still retries, or it has no retries",
	},
	{
		Name:     "retry-every-5xx",
		Models:   "a data plane that retries every 5xx (a retry_on: 5xx policy) whatever retry.codes lists",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(func(r *gwv1.HTTPRouteRetry) { r.Codes = everyStatus5xx() }))},
		Profiles: []string{httpProfile},
		Breaks:   []features.FeatureName{features.SupportHTTPRouteRetryCodes},
		Passes:   "its backends fail only with codes the rule lists, or not with a status",
	},
	{
		Name:     "backend-request-timeout-ignored",
		Models:   "a data plane that silently ignores timeouts.backendRequest",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(ignoreBackendTimeout)},
		Profiles: []string{httpProfile},
		Breaks:   []features.FeatureName{gwfeatures.SupportHTTPRouteBackendTimeout},
		Passes:   "timeouts.backendRequest does not decide its outcome",
	},
	{
		Name:     "request-timeout-per-attempt",
		Models:   "a data plane that maps timeouts.request on a retried rule to a per-try timeout, so retries get a fresh budget each",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(requestTimeoutPerAttempt)},
		Profiles: []string{httpProfile},
		Breaks:   []features.FeatureName{features.SupportHTTPRouteRetryWithRequestTimeout},
		Passes:   "its retried rule sets no timeouts.request, so nothing becomes a per-try bound",
	},
	{
		Name: "stream-reset-not-retried",
		Models: "a data plane whose retry policy covers connection failures but not the reset of an HTTP/2 stream, as Envoy's " +
			"retry_on: connect-failure without reset does: the backend's RST_STREAM is the client's answer",
		Gateway: runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{
			// net/http's HTTP/2 transport reports a reset as "stream error: ...".
			RetriesAttemptError: func(err error) bool { return !strings.Contains(err.Error(), "stream error") },
		}},
		Profiles: []string{httpProfile},
		Breaks:   []features.FeatureName{features.SupportHTTPRouteRetryStreamReset},
		Passes:   "its failing attempts are HTTP/1.1 connection errors, timeouts or statuses, which this data plane still retries, or it has no retries",
	},
	{
		Name:     "non-idempotent-not-retried",
		Models:   "a data plane that never retries a POST, as nginx's proxy_next_upstream does by default (GEP-1731 allows it)",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{NoNonIdempotentRetries: true}},
		Profiles: []string{httpProfile},
		Breaks:   []features.FeatureName{features.SupportHTTPRouteRetryNonIdempotent},
		Passes:   "it retries GET requests only, which this data plane still retries",
	},
	{
		Name: "timeouts-as-inactivity",
		Models: "a data plane whose route timeouts are inactivity timers, as HAProxy's timeout server is, restarted by every response " +
			"byte or message, and which (like HAProxy) does not rewrite grpc-timeout",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{InactivityTimeouts: true}},
		Profiles: []string{httpProfile, grpcProfile},
		Fails:    []string{retryBudget, routeTimeouts, grpcMaxStream, grpcStrict, grpcDeadline, grpcPropagation, grpcCancels},
		Passes:   "no response it waits for keeps trickling past a timeout, so an inactivity timer and a deadline end alike",
	},
	{
		Name: "accepted-before-served",
		Models: "a data plane fed asynchronously (xDS, a reload): routes and Gateways are Accepted and Programmed, and readiness " +
			"changes reach the data plane, seconds late; no test may take a status for a served route",
		Gateway:  runnertest.ReferenceGateway{LateApply: 2 * time.Second},
		Profiles: []string{httpProfile, grpcProfile, connProfile, probeProfile, budgetProfile},
		Passes:   "it waits for traffic to be served (and for readiness to reach the data plane), not for a status alone",
	},

	// GRPCRoute timeouts (GEP-3139). UNAVAILABLE at expiry fails only the
	// strict DeadlineExceeded test.
	{
		Name:     "grpc-max-stream-duration-ignored",
		Models:   "a data plane that silently ignores timeouts.maxStreamDuration",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGRPCRule(func(r *ir.GRPCRule) { r.MaxStreamDuration = 0 })},
		Profiles: []string{grpcProfile},
		Breaks:   []features.FeatureName{features.SupportGRPCRouteMaxStreamDuration},
	},
	{
		Name:     "grpc-strict-enforcement-inverted",
		Models:   "a data plane that reads strictEnforcement the wrong way round",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGRPCRule(func(r *ir.GRPCRule) { r.StrictDeny = !r.StrictDeny })},
		Profiles: []string{grpcProfile},
		Breaks:   []features.FeatureName{features.SupportGRPCRouteStrictEnforcement},
		Passes:   "its calls send no grpc-timeout, so strictEnforcement has nothing to choose between",
	},
	{
		Name:     "grpc-client-timeout-ignored",
		Models:   "a data plane that ignores the client's grpc-timeout",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{IgnoreClientTimeout: true}}},
		Profiles: []string{grpcProfile},
		Breaks:   []features.FeatureName{features.SupportGRPCRouteStrictEnforcement},
		Passes:   "its calls send no grpc-timeout, so there is none to ignore",
	},
	{
		Name:     "grpc-looser-timeout-wins",
		Models:   "a data plane that takes the longer of maxStreamDuration and grpc-timeout under Allow",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{LooserWins: true}}},
		Profiles: []string{grpcProfile},
		Breaks:   []features.FeatureName{features.SupportGRPCRouteStrictEnforcement},
		Passes:   "its calls send no grpc-timeout, so there is no looser bound to take",
	},
	{
		Name:     "grpc-unavailable-on-expiry",
		Models:   "a data plane that ends an expired call as an HTTP 504 would map: UNAVAILABLE, not DEADLINE_EXCEEDED",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{UnavailableOnExpiry: true}}},
		Profiles: []string{grpcProfile},
		Breaks:   []features.FeatureName{features.SupportGRPCRouteMaxStreamDurationDeadlineExceeded},
		Passes:   "it checks when a call ends or the bound it carries, not the code of an expired call",
	},
	{
		Name:     "grpc-no-timeout-propagation",
		Models:   "a data plane that forwards grpc-timeout as received, not the call's remaining bound",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{NoTimeoutPropagation: true}}},
		Profiles: []string{grpcProfile},
		Breaks:   []features.FeatureName{features.SupportGRPCRouteTimeoutPropagation},
		Passes:   "it checks when a call ends, not the grpc-timeout the backend receives",
	},
	{
		Name: "grpc-refuses-early-ends",
		Models: "HAProxy in front of a gRPC backend: a call that ends before any response header (the backend's reset, which a " +
			"backend whose own deadline comes from the forwarded grpc-timeout sends at the deadline, or the deadline itself) " +
			"reaches the HTTP/2 client as RST_STREAM REFUSED_STREAM, which says the call was never processed: gRPC and HTTP/2 " +
			"clients send it again, so the deadline does not end the call",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{RefusesEarlyGRPCEnds: true}}},
		Profiles: []string{grpcProfile, ffProfile},
		Fails: []string{tests.GRPCRouteStrictEnforcement.ShortName, tests.GRPCRouteMaxStreamDuration.ShortName,
			tests.GRPCRouteMaxStreamDurationDeadlineExceeded.ShortName, tests.GRPCRouteMaxStreamDurationCancelsBackend.ShortName},
		Passes: "its calls are answered inside their bound, or fail after their response headers",
	},

	// Connection-level timeouts (fields silently ignored, and HAProxy's
	// HTTP mode, which closes a tunnel at once on the backend's FIN).
	{
		Name:     "server-timeout-ignored",
		Models:   "a data plane that ignores the server timeout it was configured with",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.Server = 0 })},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionServerTimeout},
		Passes:   "it exercises another of the Gateway's timers, which this data plane keeps",
	},
	{
		Name:     "client-timeout-ignored",
		Models:   "a data plane that ignores the client timeout it was configured with",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.Client = 0 })},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionClientTimeout},
		Passes:   "it exercises another of the Gateway's timers, which this data plane keeps",
	},
	{
		Name:     "tunnel-timeout-ignored",
		Models:   "a data plane that applies the client and server timeouts to WebSockets",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.Tunnel = 0 })},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionTunnelTimeout},
		Passes:   "it exercises another of the Gateway's timers, which this data plane keeps",
	},
	{
		Name:     "half-closed-tunnel-lingers",
		Models:   "a data plane without a client-fin timeout: a tunnel whose backend half-closed stays open until the tunnel timeout",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.ClientFin = 0 })},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionClientFinTimeout},
		Passes:   "it exercises another of the Gateway's timers, which this data plane keeps",
	},
	{
		Name:     "tunnel-closed-on-backend-fin",
		Models:   "HAProxy in HTTP mode: when the backend half-closes a WebSocket, both sides are closed at once, client-fin never applies",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{CloseTunnelOnBackendFIN: true}},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionClientFinHalfOpen},
		Passes:   "no backend half-closes while the client's side stays open",
	},
	{
		Name:     "server-fin-timeout-ignored",
		Models:   "a data plane without a server-fin timeout: a tunnel whose client half-closed stays open until the tunnel timeout",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.ServerFin = 0 })},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionServerFinTimeout},
		Passes:   "it exercises another of the Gateway's timers, which this data plane keeps",
	},
	{
		Name:     "tls-inspect-delay-ignored",
		Models:   "a data plane that waits the client timeout, not the inspect delay, for a ClientHello",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.TLSInspectDelay = 0 })},
		Profiles: []string{connProfile},
		Breaks:   []features.FeatureName{features.SupportConnectionTLSInspectDelay},
		Passes:   "it exercises another of the Gateway's timers, which this data plane keeps",
	},

	// Every profile with a timer.
	{
		Name: "reload-restarts-timers",
		Models: "a data plane that applies configuration by reloading (HAProxy, nginx): each change restarts the client timeout " +
			"of connections waiting for a request and the limits of open tunnels; with no change during a window (the runner's " +
			"schedule) it passes, and with other tests' changes let in (GATEWITNESS_NEGATIVE_CHURN=1) it fails timing tests",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{ReloadRestartsTimers: true}},
		Profiles: []string{httpProfile, grpcProfile, connProfile},
		Passes:   "the runner lets no configuration change reach the gateway while a timing window is open, so no reload restarts a timer it measures",
	},
	// Eventual consistency: data planes that serve a change after the API
	// calls return and after the status says so. Every test waits for
	// evidence from the data plane (evidence.go), so each passes them all.
	{
		Name: "lagging-replica",
		Models: "two data-plane replicas behind every Gateway address, as two proxy processes on sockets bound with SO_REUSEPORT: " +
			"each new connection goes to one of the replicas listening on its port, at random, so one that has not yet bound a new " +
			"Gateway's port gets none of its connections; one reloads 3s after every change and takes the newest snapshot then, as a " +
			"proxy that reads its configuration at a late reload, with status written " +
			"when the first has, and each keeps its own retry budgets; a test that takes three answers in a row for served, or a " +
			"status for served, times the lagging replica's older configuration",
		Gateway:  runnertest.ReferenceGateway{LaggingReplica: 3 * time.Second},
		Profiles: []string{httpProfile, grpcProfile, connProfile, ffProfile, budgetProfile},
		Passes: "it waits until 20 answers in a row, each on a connection of its own, come from the route's backend, " +
			"which crosses both replicas, and its clean-up until as many no longer do; a Gateway of its own is created only " +
			"once its routes and backends are in place, so the first snapshot either replica listens with serves them",
	},
	{
		Name: "programmed-before-served",
		Models: "a controller that writes Accepted and Programmed when it hands a change to its data plane, which serves it 5s " +
			"later (an xDS push a proxy has not yet taken, a reload still warming), deletions too: the status is seconds ahead " +
			"of what is served, longer than upstream's checks wait after a miss, and a deleted route is served that long",
		Gateway:  runnertest.ReferenceGateway{LateApply: 5 * time.Second},
		Profiles: []string{httpProfile, grpcProfile, connProfile, ffProfile},
		Passes:   "it waits for the data plane to serve its routes, and its clean-up for them to be gone, not for a status",
	},
	{
		Name: "late-apply-restarts-timers",
		Models: "a data plane that applies each change by reloading about 0.5s after the API calls return (a controller's " +
			"debounce, then the reload), restarting the client timeout of connections waiting for a request and the limits of " +
			"open tunnels, as reload-restarts-timers does: a window opened when a step's API calls return, not when the data " +
			"plane serves it, holds another test's reload",
		Gateway: runnertest.ReferenceGateway{LateApply: 500 * time.Millisecond,
			DataPlane: dataplanetest.Hooks{ReloadRestartsTimers: true}},
		Profiles: []string{httpProfile, grpcProfile, connProfile},
		Passes: "the windows open only once every configuration step before them is served (or gone) on the data plane, " +
			"so no late reload restarts a timer it measures",
	},
	{
		Name: "timers-10-percent-early",
		Models: "a data plane whose timers fire 10% before their configured time (a coarse timer wheel that rounds down, a clock " +
			"that runs fast): the connection timeouts and timeouts.request are 0.9 of their value. Left as they are: the timers whose " +
			"windows allow for the backend's clock (timeouts.backendRequest and client-fin, measured from the backend's ledger), and " +
			"maxStreamDuration, which a snapshot cannot shorten without shortening the grpc-timeout it propagates; those windows fail " +
			"10% early at 500ms but not at 2s",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: timersEarly(0.9)},
		Profiles: []string{httpProfile, connProfile},
		Fails:    []string{routeTimeouts, retryBudget, connServer, connClient, connTunnel, connServerFin, connTLS},
		Passes:   "its timers are not shortened (see Models), or it times none",
	},

	// Retry budgets (GEP-3388, XBackendTrafficPolicy retryConstraint).
	{
		Name:   "retry-budget-ignored",
		Models: "a data plane without retry budgets that accepts the XBackendTrafficPolicy and silently ignores retryConstraint: every retry the route allows is made",
		Gateway: runnertest.ReferenceGateway{MutateConfig: eachHTTPBackend(func(*ir.HTTPRoute, *ir.Backend, *ir.RetryBudget) *ir.RetryBudget {
			return nil
		})},
		Profiles: []string{budgetProfile},
		Fails:    []string{budgetMinRate, budgetPerBackend, budgetUnderLoad},
		Passes:   "it retries within the budget, which a data plane without one allows too",
	},
	{
		Name: "retry-budget-per-route",
		Models: "a data plane that puts the budget on each route's retry policy (as route-level retry budgets, such as Linkerd's, " +
			"are counted) instead of on the backend, so that every route to a Service has a budget of its own",
		Gateway: runnertest.ReferenceGateway{MutateConfig: eachHTTPBackend(func(r *ir.HTTPRoute, _ *ir.Backend, rb *ir.RetryBudget) *ir.RetryBudget {
			rb.Key += " via HTTPRoute " + r.Namespace + "/" + r.Name
			return rb
		})},
		Profiles: []string{budgetProfile},
		Breaks:   []features.FeatureName{features.SupportBackendRetryBudgetPerBackend},
		Passes:   "it sends through one route, where a per-route budget is the backend's",
	},
	{
		Name:   "min-retry-rate-ignored",
		Models: "a data plane that implements budget.percent but silently ignores minRetryRate, so a quiet backend gets no retries at all",
		Gateway: runnertest.ReferenceGateway{MutateConfig: eachHTTPBackend(func(_ *ir.HTTPRoute, _ *ir.Backend, rb *ir.RetryBudget) *ir.RetryBudget {
			rb.MinRetries = 0
			return rb
		})},
		Profiles: []string{budgetProfile},
		Breaks:   []features.FeatureName{features.SupportBackendRetryBudgetMinRetryRate},
		Passes:   "budget.percent, not minRetryRate, sets the budget it is held to",
	},
	{
		Name:     "retry-budget-relays-backend-status",
		Models:   "a data plane that answers a request whose retry the budget refused with the backend's failed response, as Envoy does when its retry budget overflows, not 503",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{RetryBudgetRelaysBackendStatus: true}},
		Profiles: []string{budgetProfile},
		Fails:    []string{budgetMinRate, budgetPerBackend, budgetUnderLoad},
		Passes:   "no retry of it is refused by the budget, so no status is relayed",
	},
	{
		Name: "retry-budget-percent-ignored",
		Models: "a data plane that maps retryConstraint to a retry rate limiter (a token bucket of minRetryRate, as gRPC's retry " +
			"throttling and rate-limited retry policies are) and silently ignores budget.percent",
		Gateway: runnertest.ReferenceGateway{MutateConfig: eachHTTPBackend(func(_ *ir.HTTPRoute, _ *ir.Backend, rb *ir.RetryBudget) *ir.RetryBudget {
			rb.Percent = 0
			return rb
		})},
		Profiles: []string{budgetProfile},
		Breaks:   []features.FeatureName{features.SupportBackendRetryBudget},
		Passes:   "it stays within minRetryRate, where a token bucket and the percentage agree",
	},

	// Health probes through a mesh.
	{
		Name:     "probe-proxy-http-always-up",
		Models:   "a sidecar that answers HTTP probes itself",
		Gateway:  runnertest.ReferenceGateway{ProbeProxy: probeproxytest.Hooks{HTTPAlwaysUp: true}},
		Profiles: []string{probeProfile},
		Breaks:   []features.FeatureName{features.SupportMeshProbeHTTP, features.SupportMeshProbeRewrite},
		Passes:   "it checks a TCP or gRPC probe, which this proxy still forwards",
	},
	{
		Name:     "probe-proxy-tcp-always-up",
		Models:   "a sidecar that captures inbound traffic and accepts every TCP probe itself",
		Gateway:  runnertest.ReferenceGateway{ProbeProxy: probeproxytest.Hooks{TCPAlwaysUp: true}},
		Profiles: []string{probeProfile},
		Breaks:   []features.FeatureName{features.SupportMeshProbeTCP},
		Passes:   "it checks an HTTP or gRPC probe, which this proxy still forwards",
	},
	{
		Name:     "probe-proxy-grpc-always-serving",
		Models:   "a sidecar that answers every gRPC probe SERVING",
		Gateway:  runnertest.ReferenceGateway{ProbeProxy: probeproxytest.Hooks{GRPCAlwaysServing: true}},
		Profiles: []string{probeProfile},
		Breaks:   []features.FeatureName{features.SupportMeshProbeGRPC},
		Passes:   "it checks an HTTP or TCP probe, which this proxy still forwards",
	},
	{
		Name:     "no-mesh",
		Models:   "a cluster with no mesh: the kubelet probes every Pod directly, and a probe test has nothing of a mesh to verify",
		Gateway:  runnertest.ReferenceGateway{NoMesh: true},
		Profiles: []string{probeProfile},
		Skips:    []string{meshHTTP, meshTCP, meshGRPC, meshRewrite},
	},
	// Fault fidelity: backend failures mid-response, and streams.
	{
		Name: "completes-truncated-responses",
		Models: "a proxy that re-frames bodies and ends one whose backend failed mid-way as if it were complete: a last-chunk " +
			"over HTTP/1.1, END_STREAM over HTTP/2, as HAProxy 2.6 did for an HTTP/2 client whose backend reset mid-body",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{CompletesTruncated: true}}},
		Profiles: []string{ffProfile},
		Fails:    []string{ffH1Truncation, ffH2Truncation},
		Passes:   "its responses do not fail mid-body, or fail as gRPC streams, whose relay is its own",
		Unaffected: map[string]string{
			ffOnce:        "the client still gets the backend's status and headers, and the backend sees the request once",
			ffStreamed:    "re-framed bodies are still relayed as they come",
			ffGRPCFailure: "gRPC responses keep their own relay: a cut stream still has no grpc-status, which clients read as INTERNAL",
			ffGRPCStreams: "gRPC streams are relayed message by message as before",
		},
	},
	{
		Name: "ends-truncated-h2-stream",
		Models: "HAProxy 2.6 relaying to an HTTP/2 client: a response whose backend failed mid-body ends with a clean END_STREAM " +
			"after what arrived, its Content-Length kept (so short of it), where Go's client alone notices the missing bytes",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{EndsTruncatedHTTP2Stream: true}}},
		Profiles: []string{ffProfile},
		Fails:    []string{ffH2Truncation},
		Unaffected: map[string]string{
			ffH1Truncation: "HTTP/1.1 clients keep the relay",
			ffOnce:         "the client still gets the backend's status and headers, and the backend sees the request once",
			ffStreamed:     "streams that do not fail are relayed as they come",
			ffGRPCFailure:  "gRPC responses keep their own relay: a cut stream still has no grpc-status, which clients read as INTERNAL",
			ffGRPCStreams:  "streams that do not fail are relayed as they come",
		},
	},
	{
		Name: "empty-reply-on-mid-body-failure",
		Models: "a proxy that aborts a response whose backend failed mid-way without sending what it buffered (this data plane's " +
			"own defect until #26): a small response becomes an empty reply, which keep-alive clients resend",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{DropsOnAbort: true}}},
		Profiles: []string{ffProfile},
		Breaks:   []features.FeatureName{features.SupportFaultFidelitySingleAttempt},
		Passes:   "its responses do not fail mid-body, or the failure is one the client sees",
		Unaffected: map[string]string{
			ffH1Truncation: "an empty reply is a failure the client sees (it is the resend it invites that fails FaultFidelitySingleAttempt)",
			ffH2Truncation: "a reset stream without HEADERS is a failure the client sees",
			ffStreamed:     "streams that do not fail are relayed as they come",
			ffGRPCFailure:  "gRPC responses keep their own relay, whose headers are sent first",
			ffGRPCStreams:  "streams that do not fail are relayed as they come",
		},
	},
	{
		Name: "bare-reset-over-h2",
		Models: "a proxy that, when its backend fails mid-response, resets an HTTP/2 client's stream without sending the status and " +
			"headers it still held (RFC 9113 allows a reset at any point, and HTTP/2 clients do not resend it), and claims " +
			"FaultFidelityRelayHeaders all the same; HTTP/1.1 clients get what it received, then a close",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{BareResetOverHTTP2: true}}},
		Profiles: []string{ffProfile},
		Fails:    []string{ffOnce},
		Unaffected: map[string]string{
			ffH1Truncation: "HTTP/1.1 clients keep the relay",
			ffH2Truncation: "a reset stream without HEADERS is a failure the client sees",
			ffStreamed:     "streams that do not fail are relayed as they come",
			ffGRPCFailure:  "gRPC responses keep their own relay, whose headers are sent first",
			ffGRPCStreams:  "streams that do not fail are relayed as they come",
		},
	},
	{
		Name: "bare-reset-over-h2-unclaimed",
		Models: "the bare-reset-over-h2 proxy, saying so (FaultFidelityRelayHeaders not claimed): one attempt and a failure the " +
			"client sees are what FaultFidelitySingleAttempt asks, and it passes",
		Gateway:   runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{BareResetOverHTTP2: true}}},
		Unclaimed: []features.FeatureName{features.SupportFaultFidelityRelayHeaders},
		Profiles:  []string{ffProfile},
		Unaffected: map[string]string{
			ffOnce:         "each request reaches the backend once; without FaultFidelityRelayHeaders no status is demanded",
			ffH1Truncation: "HTTP/1.1 clients keep the relay",
			ffH2Truncation: "a reset stream without HEADERS is a failure the client sees",
			ffStreamed:     "streams that do not fail are relayed as they come",
			ffGRPCFailure:  "gRPC responses keep their own relay, whose headers are sent first",
			ffGRPCStreams:  "streams that do not fail are relayed as they come",
		},
	},
	{
		Name:    "buffers-responses",
		Models:  "a proxy that holds each response body (HTTP and gRPC) until it ends, as nginx's proxy_buffering does",
		Gateway: runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{BuffersResponses: true}}},
		// Every response is held, so the HTTP and gRPC timeout tests, whose
		// backends trickle and stream, are in its reach too.
		// The gRPC timeout tests that expect a stream's first messages
		// before its deadline catch it too.
		Profiles: []string{ffProfile, httpProfile, grpcProfile},
		Fails:    []string{ffStreamed, ffGRPCStreams, grpcMaxStream, grpcDeadline},
		Passes:   "it waits for whole answers, or for nothing a held body changes",
		Unaffected: map[string]string{
			ffH1Truncation: "a held body that ends in an error is still relayed as cut short",
			ffH2Truncation: "a held body that ends in an error is still relayed as cut short",
			ffOnce:         "the status and headers still reach the client, and the backend sees the request once",
			ffGRPCFailure:  "a held stream that ends in an error is still reset",
			retryCodes:     "its answers are whole and small; holding them changes no status or attempt",
			retryBackoff:   "its answers are whole and small; holding them changes no gap between attempts",
			retryBackendTimeout: "a backend that stalls before its headers is timed out as before; holding " +
				"the bodies of answers changes no attempt",
			retryConnection:  "its attempts fail before any response",
			retryBudget:      "a trickling body held until the deadline cuts it is still relayed cut short, at the deadline",
			retryBody:        "its answers are whole and small",
			retryStreamReset: "its attempts fail before any response",
			routeTimeouts:    "a body held until the timeout cuts it is still relayed cut short, at the timeout",
			grpcStrict:       "a stream held until the limit ends it still ends at the limit",
			grpcPropagation:  "it reads the grpc-timeout the backend got, which holding the response does not change",
			grpcCancels:      "the backend's stream is still cancelled at the limit",
		},
	},
	{
		Name: "buffers-request-streams",
		Models: "a proxy that holds each request body until the client ends it (or its own timeout ends the wait) before " +
			"sending it on, as nginx's proxy_request_buffering does: a gRPC client stream reaches the backend only once the client half-closes",
		Gateway: runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{BuffersRequests: true}}},
		// The GRPCRoute timeout tests hold client and bidirectional streams
		// open, so they are in its reach too.
		Profiles: []string{ffProfile, grpcProfile},
		Fails:    []string{ffGRPCStreams, grpcCancels},
		Passes:   "its requests have no body",
		Unaffected: map[string]string{
			ffGRPCFailure:   "its calls half-close at once, so their request bodies are whole",
			grpcMaxStream:   "a stream held until the limit still ends with a non-OK status at the limit (the wait is bounded by the call's budget)",
			grpcStrict:      "a stream held until the limit still ends at the limit",
			grpcDeadline:    "a stream held until the limit still ends with DEADLINE_EXCEEDED at the limit",
			grpcPropagation: "its calls that reach the backend half-close at once",
		},
	},
	{
		Name:     "grpc-reset-as-ok",
		Models:   "a proxy that ends a gRPC stream whose backend reset mid-way with trailers of its own, grpc-status 0",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{Relay: dataplanetest.Relay{GRPCResetAsOK: true}}},
		Profiles: []string{ffProfile},
		Fails:    []string{ffGRPCFailure},
		Passes:   "its HTTPRoute responses keep their relay, and its gRPC streams do not fail",
	},
}

// healthy is the unbroken reference gateway, checked against every test.
var healthy = negative.Breakage{
	Name:     negative.Healthy,
	Models:   "the reference gateway as it is",
	Profiles: []string{httpProfile, grpcProfile, connProfile, probeProfile, budgetProfile, ffProfile},
}

// TestNegativeHelper is the child process of the negative checks: run by
// negative.Run, it runs the selected conformance tests against the
// reference gateway broken as the named breakage says. Run directly, it
// skips.
func TestNegativeHelper(t *testing.T) { negative.Helper(t, breakages) }

// EnvTolerances selects the tolerances TestEveryGatewitnessTestHasABreakage
// runs at, as a comma-separated list of "min" (tests.MinTimingTolerance,
// 500ms), "ci" (tests.CITimingTolerance, 1.5s) and "max"
// (tests.MaxTimingTolerance, 2s): the healthy gateway and every breakage
// run at each. "min,max" is the full matrix the tolerance-proof claim
// rests on (about 11 minutes under -race on a loaded two-core machine, 1m
// to 2m a child); run it when you change a test, a breakage or a window,
// on a machine quiet enough for the healthy gateway's timers to fire
// within 500ms. Unset, the healthy gateway runs at "ci" and "max" and the
// breakages at "max" (about 6 minutes), to stay inside go test's 10-minute
// default on this repository's loaded CI machine: at the largest
// tolerance a breakage escapes its tests if it ever does.
const EnvTolerances = "GATEWITNESS_NEGATIVE_TOLERANCES"

// EnvBreakages, when set, limits TestEveryGatewitnessTestHasABreakage's runs
// to the comma-separated breakage names (and "healthy").
const EnvBreakages = "GATEWITNESS_NEGATIVE_BREAKAGES"

// EnvSide, when set, limits TestEveryGatewitnessTestHasABreakage's child
// runs to one side of the matrix: "healthy" runs only the unbroken
// gateway's children, "broken" only the breakages'; unset, both. make test
// (hack/test.sh) runs the two sides apart, each in full: the broken side
// from this package's test binary built without -race, started as soon as
// that binary is built and so beside go test's build; the healthy side in
// go test's binary, race-enabled under TEST_RACE=all, where a race in the
// suite, the gateway or the cluster shows. The registry checks run on either side.
const EnvSide = "GATEWITNESS_NEGATIVE_SIDE"

// sides are EnvSide's accepted values; "" is both.
var sides = []string{"", "healthy", "broken"}

// onSide reports whether the child run of pack belongs to side (EnvSide).
func onSide(side string, pack []negative.Breakage) bool {
	return side == "" || (side == "healthy") == (pack[0].Name == negative.Healthy)
}

// TestEveryGatewitnessTestHasABreakage checks the breakages registry and
// runs it: every gatewitness test must be failed by at least one breakage;
// every breakage must name tests that exist in its scope; and, in child
// processes at the smallest and the largest accepted timing tolerance (see
// EnvTolerances for which runs go at which), each breakage must fail
// exactly the tests it names, skip exactly its Skips, and leave every other
// test of its profiles passing, while the healthy reference gateway passes
// every test and each records observations.
func TestEveryGatewitnessTestHasABreakage(t *testing.T) {
	all := gatewitnessTests()
	checkBreakages(t, all)
	if t.Failed() {
		t.FailNow() // the registry is wrong: running it would prove nothing
	}

	tolerances := map[string]time.Duration{"min": tests.MinTimingTolerance, "ci": tests.CITimingTolerance, "max": tests.MaxTimingTolerance}
	chosen := strings.Split(os.Getenv(EnvTolerances), ",")
	breakagesAt := func(string) bool { return true }
	if os.Getenv(EnvTolerances) == "" {
		chosen = []string{"ci", "max"}
		breakagesAt = func(which string) bool { return which == "max" }
	}
	only := os.Getenv(EnvBreakages)
	side := os.Getenv(EnvSide)
	if !slices.Contains(sides, side) {
		t.Fatalf("%s=%q: accepted: healthy, broken, or unset for both sides", EnvSide, side)
	}
	type child struct {
		which string
		tol   time.Duration
		pack  []negative.Breakage
	}
	var children []child
	for _, which := range chosen {
		tol, ok := tolerances[which]
		if !ok {
			t.Fatalf("%s=%q: accepted: a comma-separated list of min, ci and max", EnvTolerances, os.Getenv(EnvTolerances))
		}
		var run []negative.Breakage
		for _, b := range breakages {
			if breakagesAt(which) && (only == "" || slices.Contains(strings.Split(only, ","), b.Name)) {
				run = append(run, b)
			}
		}
		for _, pack := range append([][]negative.Breakage{{healthy}}, negative.Pack(run)...) {
			if onSide(side, pack) { // else the other side's run (make test runs it in another binary)
				children = append(children, child{which, tol, pack})
			}
		}
	}
	// The children with the most tests ask for their slots first, so that
	// a long one does not start last, behind the short ones.
	slices.SortStableFunc(children, func(a, b child) int {
		return negative.PackTests(b.pack, all) - negative.PackTests(a.pack, all)
	})
	turns := negative.NewTurns(len(children))
	for i, c := range children {
		var names []string
		for _, b := range c.pack {
			names = append(names, b.Name)
		}
		t.Run(fmt.Sprintf("%s/%s", c.which, strings.Join(names, "+")), func(t *testing.T) {
			t.Parallel()
			got := negative.CheckInTurn(t, turns, i, "TestNegativeHelper", c.pack, all, c.tol)
			if c.pack[0].Name != negative.Healthy {
				return
			}
			for name, o := range got {
				if o.Result == reports.Pass && len(o.Observations) == 0 {
					t.Errorf("%s passed without recording an observation", name)
				}
			}
		})
	}
}

// TestTheTwoSidesMakeTheWholeMatrix: the healthy and the broken side of
// the breakage matrix (EnvSide, how make test runs it) each run a child
// the other does not, and together every child the unsplit matrix runs.
func TestTheTwoSidesMakeTheWholeMatrix(t *testing.T) {
	packs := append([][]negative.Breakage{{healthy}}, negative.Pack(breakages)...)
	for _, pack := range packs {
		var on []string
		for _, side := range sides[1:] {
			if onSide(side, pack) {
				on = append(on, side)
			}
		}
		if want := map[bool]string{true: "healthy", false: "broken"}[pack[0].Name == negative.Healthy]; len(on) != 1 || on[0] != want {
			t.Errorf("the child of %s runs on the sides %v; want only %s", pack[0].Name, on, want)
		}
		if !onSide("", pack) {
			t.Errorf("the child of %s does not run with %s unset", pack[0].Name, EnvSide)
		}
	}
}

// breakagesFile is where the breakages are declared, for the messages.
const breakagesFile = "conformance/tests/breakages_test.go"

// testsFile is where the tests are listed, for the messages.
const testsFile = "conformance/tests/tests.go"

// TestEveryBreakageAccountsForItsScope is the fast half of
// TestEveryGatewitnessTestHasABreakage (no child run): every gatewitness
// test is failed by some breakage, and every breakage's declaration says
// what it does to each test of its scope (negative.Unaccounted).
func TestEveryBreakageAccountsForItsScope(t *testing.T) {
	checkBreakages(t, gatewitnessTests())
}

// checkBreakages checks the breakages registry against the tests all, as
// TestEveryBreakageAccountsForItsScope says, naming the breakage, the test
// and the file in each message. A test the breakages name that is not
// listed gets its one message, and the rest is not checked: every other
// message would follow from it and advise the wrong fix.
func checkBreakages(t *testing.T, all []negative.Test) {
	t.Helper()
	if msgs := negative.Unlisted(breakages, all, testsFile); len(msgs) > 0 {
		for _, msg := range msgs {
			t.Error(msg)
		}
		return
	}
	seen := map[string]bool{}
	failed := map[string]bool{}
	for _, b := range breakages {
		if seen[b.Name] || b.Name == negative.Healthy || b.Name == "" {
			t.Errorf("breakage %q: names must be unique, not empty and not %q (%s)", b.Name, negative.Healthy, breakagesFile)
		}
		seen[b.Name] = true
		if b.Models == "" || len(b.Profiles) == 0 {
			t.Errorf("breakage %s: want Models (the real data plane it models) and Profiles (its scope) (%s)", b.Name, breakagesFile)
		}
		for _, msg := range negative.Unaccounted(b, all, breakagesFile) {
			t.Error(msg)
		}
		fails, _, _ := negative.Expected(b, all)
		for _, name := range fails {
			failed[name] = true
		}
	}
	for _, ct := range all {
		if !failed[ct.ShortName] {
			t.Errorf("gatewitness test %s has no breakage: add it to the Fails of the breakage that must fail it (or a feature it needs to that breakage's Breaks), or declare one (a reference gateway broken the way a real data plane goes wrong), in %s", ct.ShortName, breakagesFile)
		}
	}
}

// gatewitnessTests are gatewitness's tests as the negative checks see them.
func gatewitnessTests() []negative.Test {
	var out []negative.Test
	for _, ct := range tests.ConformanceTests {
		out = append(out, negative.Test{ShortName: ct.ShortName, Features: ct.Features})
	}
	return out
}

// eachHTTPRule returns a MutateConfig that applies f to every HTTPRoute
// rule of a snapshot.
func eachHTTPRule(f func(*ir.HTTPRule)) func(*ir.Config) {
	return func(cfg *ir.Config) {
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

// eachHTTPBackend returns a MutateConfig that replaces the retry budget of
// every HTTPRoute backend that has one with what f returns for a copy of
// it (nil: no budget).
func eachHTTPBackend(f func(*ir.HTTPRoute, *ir.Backend, *ir.RetryBudget) *ir.RetryBudget) func(*ir.Config) {
	return func(cfg *ir.Config) {
		for gi := range cfg.Gateways {
			for li := range cfg.Gateways[gi].Listeners {
				l := &cfg.Gateways[gi].Listeners[li]
				for ri := range l.HTTPRoutes {
					r := &l.HTTPRoutes[ri]
					for i := range r.Rules {
						for bi := range r.Rules[i].Backends {
							b := &r.Rules[i].Backends[bi].Backend
							if b.RetryBudget != nil {
								rb := *b.RetryBudget
								b.RetryBudget = f(r, b, &rb)
							}
						}
					}
				}
			}
		}
	}
}

// eachGRPCRule returns a MutateConfig that applies f to every GRPCRoute rule
// of a snapshot.
func eachGRPCRule(f func(*ir.GRPCRule)) func(*ir.Config) {
	return func(cfg *ir.Config) {
		for gi := range cfg.Gateways {
			for li := range cfg.Gateways[gi].Listeners {
				l := &cfg.Gateways[gi].Listeners[li]
				for ri := range l.GRPCRoutes {
					for i := range l.GRPCRoutes[ri].Rules {
						f(&l.GRPCRoutes[ri].Rules[i])
					}
				}
			}
		}
	}
}

// eachGateway returns a MutateConfig that applies f to the connection
// timeouts of every Gateway of a snapshot.
func eachGateway(f func(*ir.ConnectionTimeouts)) func(*ir.Config) {
	return func(cfg *ir.Config) {
		for i := range cfg.Gateways {
			f(&cfg.Gateways[i].Timeouts)
		}
	}
}

// withRetry returns a rule mutation that applies f to the retry stanza of
// rules that have one. The snapshot's stanzas may be shared with the
// controller's objects, so f gets a copy.
func withRetry(f func(*gwv1.HTTPRouteRetry)) func(*ir.HTTPRule) {
	return func(r *ir.HTTPRule) {
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
func requestTimeoutPerAttempt(r *ir.HTTPRule) {
	if r.Retry == nil || r.Timeouts == nil || r.Timeouts.Request == nil {
		return
	}
	t := r.Timeouts.DeepCopy()
	t.BackendRequest, t.Request = t.Request, nil
	r.Timeouts = t
}

// ignoreBackendTimeout drops a rule's timeouts.backendRequest: attempts
// are bounded by timeouts.request alone.
func ignoreBackendTimeout(r *ir.HTTPRule) {
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

// timersEarly returns a MutateConfig that scales timers of a snapshot by
// f: the connection timeouts but client-fin, and each HTTPRoute rule's
// timeouts.request (see the breakage timers-10-percent-early for why not
// the others).
func timersEarly(f float64) func(*ir.Config) {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	scaleAPI := func(d *gwv1.Duration) *gwv1.Duration {
		v, err := ir.ParseDuration("timer", d)
		if err != nil || v == 0 {
			return d
		}
		s := scale(v)
		out := gwv1.Duration(fmt.Sprintf("%ds%dms", int(s/time.Second), (s % time.Second).Milliseconds()))
		return &out
	}
	return func(cfg *ir.Config) {
		eachGateway(func(c *ir.ConnectionTimeouts) {
			for _, d := range []*time.Duration{&c.Client, &c.Server, &c.ServerFin, &c.Tunnel, &c.TLSInspectDelay} {
				*d = scale(*d)
			}
		})(cfg)
		eachHTTPRule(func(r *ir.HTTPRule) {
			if r.Timeouts != nil {
				t := r.Timeouts.DeepCopy()
				t.Request = scaleAPI(t.Request)
				r.Timeouts = t
			}
		})(cfg)
	}
}

// TestNegativeChildrenHoldWindows: a breakage child runs every test of its
// profiles at once; with no more parallel slots than parallel tests (the
// rerun's subtest counted) the runner turns the schedule of timing windows
// off (runner.scheduleWarning), and reload-restarts-timers then fails the
// connection tests it must pass. Caught here, not after a child run.
func TestNegativeChildrenHoldWindows(t *testing.T) {
	parallel := 1 // the rerun's subtest
	for _, ct := range tests.ConformanceTests {
		if ct.Parallel {
			parallel++
		}
	}
	if negative.ChildParallel <= parallel {
		t.Errorf("negative.ChildParallel is %d, not more than the %d parallel tests of ConformanceTests and the rerun: raise it in conformance/negative/negative.go",
			negative.ChildParallel, parallel)
	}
}
