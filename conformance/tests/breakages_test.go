package tests_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	routeTimeouts       = tests.HTTPRouteTimeoutsWithoutRetry.ShortName

	grpcMaxStream   = tests.GRPCRouteMaxStreamDuration.ShortName
	grpcStrict      = tests.GRPCRouteStrictEnforcement.ShortName
	grpcDeadline    = tests.GRPCRouteMaxStreamDurationDeadlineExceeded.ShortName
	grpcPropagation = tests.GRPCRouteTimeoutPropagation.ShortName
	grpcCancels     = tests.GRPCRouteMaxStreamDurationCancelsBackend.ShortName

	connServer        = tests.ConnectionServerTimeout.ShortName
	connClient        = tests.ConnectionClientTimeout.ShortName
	connTunnel        = tests.ConnectionTunnelTimeout.ShortName
	connClientFin     = tests.ConnectionClientFinTimeout.ShortName
	connClientFinHeld = tests.ConnectionClientFinHalfOpen.ShortName
	connServerFin     = tests.ConnectionServerFinTimeout.ShortName
	connTLS           = tests.ConnectionTLSInspectDelay.ShortName

	meshHTTP    = tests.MeshProbeHTTP.ShortName
	meshTCP     = tests.MeshProbeTCP.ShortName
	meshGRPC    = tests.MeshProbeGRPC.ShortName
	meshRewrite = tests.MeshProbeRewrite.ShortName

	budgetMinRate    = tests.BackendRetryBudgetMinRetryRate.ShortName
	budgetPerBackend = tests.BackendRetryBudgetPerBackend.ShortName
	budgetUnderLoad  = tests.BackendRetryBudgetUnderLoad.ShortName
	budgetWithin     = tests.BackendRetryBudgetRetriesWithinBudget.ShortName
)

// Profiles, as the breakages name their scope.
const (
	httpProfile   = features.ProfileHTTPResilience
	grpcProfile   = features.ProfileGRPCDeadlines
	connProfile   = features.ProfileConnectionTimeouts
	probeProfile  = features.ProfileMeshProbes
	budgetProfile = features.ProfileRetryBudgets
)

// breakages are the reference gateways, broken the way real data planes go
// wrong, that gatewitness's tests are checked against (see
// TestEveryGatewitnessTestHasABreakage). Each is checked against every test
// of its Profiles: exactly Fails fail, Skips skip, the rest pass.
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
		Fails: []string{retryCodes, retryBackoff, retryBackendTimeout, retryConnection, retryBudget, retryBody,
			budgetMinRate, budgetPerBackend, budgetUnderLoad, budgetWithin},
	},
	{
		Name:     "retries-without-backoff",
		Models:   "a data plane that retries at once, ignoring retry.backoff, and claims HTTPRouteRetryBackoff all the same",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(noBackoff))},
		Profiles: []string{httpProfile},
		Fails:    []string{retryBackoff, retryBackendTimeout, retryBudget},
	},
	{
		Name:      "retries-without-backoff-unclaimed",
		Models:    "a data plane that retries at once and says so (HTTPRouteRetryBackoff not claimed): no test may hold the backoff against it",
		Gateway:   runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(noBackoff))},
		Unclaimed: []features.FeatureName{features.SupportHTTPRouteRetryBackoff},
		Profiles:  []string{httpProfile},
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
	},
	{
		Name:     "retry-every-5xx",
		Models:   "a data plane that retries every 5xx (a retry_on: 5xx policy) whatever retry.codes lists",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(withRetry(func(r *gwv1.HTTPRouteRetry) { r.Codes = everyStatus5xx() }))},
		Profiles: []string{httpProfile},
		Fails:    []string{retryCodes},
	},
	{
		Name:     "backend-request-timeout-ignored",
		Models:   "a data plane that silently ignores timeouts.backendRequest",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(ignoreBackendTimeout)},
		Profiles: []string{httpProfile},
		Fails:    []string{retryBackendTimeout, routeTimeouts},
	},
	{
		Name:     "request-timeout-per-attempt",
		Models:   "a data plane that maps timeouts.request on a retried rule to a per-try timeout, so retries get a fresh budget each",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachHTTPRule(requestTimeoutPerAttempt)},
		Profiles: []string{httpProfile},
		Fails:    []string{retryBudget},
	},
	{
		Name:     "non-idempotent-not-retried",
		Models:   "a data plane that never retries a POST, as nginx's proxy_next_upstream does by default (GEP-1731 allows it)",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{NoNonIdempotentRetries: true}},
		Profiles: []string{httpProfile},
		Fails:    []string{retryBody},
	},
	{
		Name: "timeouts-as-inactivity",
		Models: "a data plane whose route timeouts are inactivity timers, as HAProxy's timeout server is, restarted by every response " +
			"byte or message, and which (like HAProxy) does not rewrite grpc-timeout",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{InactivityTimeouts: true}},
		Profiles: []string{httpProfile, grpcProfile},
		Fails:    []string{retryBudget, routeTimeouts, grpcMaxStream, grpcStrict, grpcDeadline, grpcPropagation, grpcCancels},
	},
	{
		Name: "accepted-before-served",
		Models: "a data plane fed asynchronously (xDS, a reload): routes and Gateways are Accepted and Programmed, and readiness " +
			"changes reach the data plane, seconds late; no test may take a status for a served route",
		Gateway:  runnertest.ReferenceGateway{LateApply: 2 * time.Second},
		Profiles: []string{httpProfile, grpcProfile, connProfile, probeProfile, budgetProfile},
	},

	// GRPCRoute timeouts (GEP-3139). UNAVAILABLE at expiry fails only the
	// strict DeadlineExceeded test.
	{
		Name:     "grpc-max-stream-duration-ignored",
		Models:   "a data plane that silently ignores timeouts.maxStreamDuration",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGRPCRule(func(r *ir.GRPCRule) { r.MaxStreamDuration = 0 })},
		Profiles: []string{grpcProfile},
		Fails:    []string{grpcMaxStream, grpcStrict, grpcDeadline, grpcPropagation, grpcCancels},
	},
	{
		Name:     "grpc-strict-enforcement-inverted",
		Models:   "a data plane that reads strictEnforcement the wrong way round",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGRPCRule(func(r *ir.GRPCRule) { r.StrictDeny = !r.StrictDeny })},
		Profiles: []string{grpcProfile},
		Fails:    []string{grpcStrict, grpcPropagation},
	},
	{
		Name:     "grpc-client-timeout-ignored",
		Models:   "a data plane that ignores the client's grpc-timeout",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{IgnoreClientTimeout: true}}},
		Profiles: []string{grpcProfile},
		Fails:    []string{grpcStrict, grpcPropagation},
	},
	{
		Name:     "grpc-looser-timeout-wins",
		Models:   "a data plane that takes the longer of maxStreamDuration and grpc-timeout under Allow",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{LooserWins: true}}},
		Profiles: []string{grpcProfile},
		Fails:    []string{grpcStrict, grpcPropagation},
	},
	{
		Name:     "grpc-unavailable-on-expiry",
		Models:   "a data plane that ends an expired call as an HTTP 504 would map: UNAVAILABLE, not DEADLINE_EXCEEDED",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{UnavailableOnExpiry: true}}},
		Profiles: []string{grpcProfile},
		Fails:    []string{grpcDeadline},
	},
	{
		Name:     "grpc-no-timeout-propagation",
		Models:   "a data plane that forwards grpc-timeout as received, not the call's remaining bound",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{NoTimeoutPropagation: true}}},
		Profiles: []string{grpcProfile},
		Fails:    []string{grpcPropagation},
	},

	// Connection-level timeouts (fields silently ignored, and HAProxy's
	// HTTP mode, which closes a tunnel at once on the backend's FIN).
	{
		Name:     "server-timeout-ignored",
		Models:   "a data plane that ignores the server timeout it was configured with",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.Server = 0 })},
		Profiles: []string{connProfile},
		Fails:    []string{connServer},
	},
	{
		Name:     "client-timeout-ignored",
		Models:   "a data plane that ignores the client timeout it was configured with",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.Client = 0 })},
		Profiles: []string{connProfile},
		Fails:    []string{connClient},
	},
	{
		Name:     "tunnel-timeout-ignored",
		Models:   "a data plane that applies the client and server timeouts to WebSockets",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.Tunnel = 0 })},
		Profiles: []string{connProfile},
		Fails:    []string{connTunnel},
	},
	{
		Name:     "half-closed-tunnel-lingers",
		Models:   "a data plane without a client-fin timeout: a tunnel whose backend half-closed stays open until the tunnel timeout",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.ClientFin = 0 })},
		Profiles: []string{connProfile},
		Fails:    []string{connClientFin, connClientFinHeld},
	},
	{
		Name:     "tunnel-closed-on-backend-fin",
		Models:   "HAProxy in HTTP mode: when the backend half-closes a WebSocket, both sides are closed at once, client-fin never applies",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{CloseTunnelOnBackendFIN: true}},
		Profiles: []string{connProfile},
		Fails:    []string{connClientFinHeld},
	},
	{
		Name:     "server-fin-timeout-ignored",
		Models:   "a data plane without a server-fin timeout: a tunnel whose client half-closed stays open until the tunnel timeout",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.ServerFin = 0 })},
		Profiles: []string{connProfile},
		Fails:    []string{connServerFin},
	},
	{
		Name:     "tls-inspect-delay-ignored",
		Models:   "a data plane that waits the client timeout, not the inspect delay, for a ClientHello",
		Gateway:  runnertest.ReferenceGateway{MutateConfig: eachGateway(func(c *ir.ConnectionTimeouts) { c.TLSInspectDelay = 0 })},
		Profiles: []string{connProfile},
		Fails:    []string{connTLS},
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
		Fails:    []string{budgetPerBackend},
	},
	{
		Name:   "min-retry-rate-ignored",
		Models: "a data plane that implements budget.percent but silently ignores minRetryRate, so a quiet backend gets no retries at all",
		Gateway: runnertest.ReferenceGateway{MutateConfig: eachHTTPBackend(func(_ *ir.HTTPRoute, _ *ir.Backend, rb *ir.RetryBudget) *ir.RetryBudget {
			rb.MinRetries = 0
			return rb
		})},
		Profiles: []string{budgetProfile},
		Fails:    []string{budgetMinRate, budgetPerBackend},
	},
	{
		Name:     "retry-budget-relays-backend-status",
		Models:   "a data plane that answers a request whose retry the budget refused with the backend's failed response, as Envoy does when its retry budget overflows, not 503",
		Gateway:  runnertest.ReferenceGateway{DataPlane: dataplanetest.Hooks{RetryBudgetRelaysBackendStatus: true}},
		Profiles: []string{budgetProfile},
		Fails:    []string{budgetMinRate, budgetPerBackend, budgetUnderLoad},
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
		Fails:    []string{budgetUnderLoad, budgetWithin},
	},

	// Health probes through a mesh.
	{
		Name:     "probe-proxy-http-always-up",
		Models:   "a sidecar that answers HTTP probes itself",
		Gateway:  runnertest.ReferenceGateway{ProbeProxy: probeproxytest.Hooks{HTTPAlwaysUp: true}},
		Profiles: []string{probeProfile},
		Fails:    []string{meshHTTP, meshRewrite},
	},
	{
		Name:     "probe-proxy-tcp-always-up",
		Models:   "a sidecar that captures inbound traffic and accepts every TCP probe itself",
		Gateway:  runnertest.ReferenceGateway{ProbeProxy: probeproxytest.Hooks{TCPAlwaysUp: true}},
		Profiles: []string{probeProfile},
		Fails:    []string{meshTCP},
	},
	{
		Name:     "probe-proxy-grpc-always-serving",
		Models:   "a sidecar that answers every gRPC probe SERVING",
		Gateway:  runnertest.ReferenceGateway{ProbeProxy: probeproxytest.Hooks{GRPCAlwaysServing: true}},
		Profiles: []string{probeProfile},
		Fails:    []string{meshGRPC},
	},
	{
		Name:     "no-mesh",
		Models:   "a cluster with no mesh: the kubelet probes every Pod directly, and a probe test has nothing of a mesh to verify",
		Gateway:  runnertest.ReferenceGateway{NoMesh: true},
		Profiles: []string{probeProfile},
		Skips:    []string{meshHTTP, meshTCP, meshGRPC, meshRewrite},
	},
}

// healthy is the unbroken reference gateway, checked against every test.
var healthy = negative.Breakage{
	Name:     negative.Healthy,
	Models:   "the reference gateway as it is",
	Profiles: []string{httpProfile, grpcProfile, connProfile, probeProfile, budgetProfile},
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
	var names []string
	for _, ct := range all {
		names = append(names, ct.ShortName)
	}
	seen := map[string]bool{}
	for _, b := range breakages {
		if seen[b.Name] || b.Name == negative.Healthy || b.Name == "" {
			t.Errorf("breakage %q: names must be unique, not empty and not %q", b.Name, negative.Healthy)
		}
		seen[b.Name] = true
		if b.Models == "" || len(b.Profiles) == 0 {
			t.Errorf("breakage %s: want Models (the real data plane it models) and Profiles (its scope)", b.Name)
		}
		scope := negative.Scope(b, all)
		for _, name := range append(slices.Clone(b.Fails), b.Skips...) {
			if !slices.Contains(names, name) {
				t.Errorf("breakage %s names %s, which is not a gatewitness test", b.Name, name)
			} else if !slices.Contains(scope, name) {
				t.Errorf("breakage %s names %s, which is outside its profiles %v", b.Name, name, b.Profiles)
			}
		}
	}
	for _, name := range names {
		failed := slices.ContainsFunc(breakages, func(b negative.Breakage) bool { return slices.Contains(b.Fails, name) })
		if !failed {
			t.Errorf("gatewitness test %s has no breakage: no entry of breakages (breakages_test.go) lists it in Fails, so nothing shows it can fail", name)
		}
	}
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
			var names []string
			for _, b := range pack {
				names = append(names, b.Name)
			}
			t.Run(fmt.Sprintf("%s/%s", which, strings.Join(names, "+")), func(t *testing.T) {
				t.Parallel()
				got := negative.Check(t, "TestNegativeHelper", pack, all, tol)
				if pack[0].Name != negative.Healthy {
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
