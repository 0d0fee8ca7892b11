// Package calibration checks gatewitness's tests against real data planes:
// HAProxy and nginx, driven from the reference controller's routing
// snapshots (calibration/haproxy, calibration/nginx) in the in-process
// cluster, each claiming only what its configuration can express. Every
// test's verdict on each data plane and configuration variant is
// expected from the proxy's documentation (expected.go); a run whose
// verdict differs fails with the test, the data plane, the variant, the
// expected verdict and the documented behaviour behind it.
package calibration

import (
	"slices"

	"github.com/go-logr/logr"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/calibration/haproxy"
	"github.com/gatewitness/gatewitness/calibration/nginx"
	"github.com/gatewitness/gatewitness/cluster"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

// Profiles are the profiles the calibration runs: those of HTTPRoutes,
// which both proxies serve. (The gRPC profile's core is GRPCRoute, which
// neither adapter writes; the probe profile tests the mesh, not the
// Gateway's data plane; the retry budgets are in neither proxy.)
var Profiles = []string{features.ProfileHTTPResilience, features.ProfileFaultFidelity, features.ProfileConnectionTimeouts}

// Scope returns the ShortNames of gatewitness's tests that count in one of
// Profiles: a profile counts a test when it holds every feature the test
// lists, as upstream's suite has it.
func Scope() []string {
	var out []string
	for _, ct := range gctests.ConformanceTests {
		if features.CountedIn(Profiles, ct.Features) {
			out = append(out, ct.ShortName)
		}
	}
	return out
}

// Variant is one data plane in one configuration, with what it claims.
type Variant struct {
	// DataPlane is "haproxy" or "nginx".
	DataPlane string
	// Name names the configuration: "honest" for the configuration a
	// careful implementer ships with honest claims.
	Name string
	// About says what the variant changes and who runs it so.
	About string
	// Extra are features claimed beyond the data plane's honest claims
	// (an over-claim: the tests they let run must fail).
	Extra []features.FeatureName
	// New builds the adapter.
	New func(logr.Logger) (cluster.DataPlane, error)
	// Tests, when set, are the only tests the variant runs (an over-claim
	// runs those its claims reach); nil runs every test of Profiles.
	Tests []string
	// Expect are the verdicts expected, by test ShortName, where they
	// differ from the data plane's honest table.
	Expect []Row
}

// Key names the variant: "haproxy/honest".
func (v Variant) Key() string { return v.DataPlane + "/" + v.Name }

// Claims are the features the variant claims: its data plane's honest
// claims and its Extra.
func (v Variant) Claims() []features.FeatureName {
	out := slices.Clone(honestClaims[v.DataPlane])
	out = append(out, v.Extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Variants are every variant the calibration runs.
func Variants() []Variant { return variants }

// Lookup finds a variant by its Key.
func Lookup(key string) (Variant, bool) {
	i := slices.IndexFunc(variants, func(v Variant) bool { return v.Key() == key })
	if i < 0 {
		return Variant{}, false
	}
	return variants[i], true
}

// Keys are the Keys of every variant.
func Keys() []string {
	var out []string
	for _, v := range variants {
		out = append(out, v.Key())
	}
	return out
}

func newHAProxy(o haproxy.Options) func(logr.Logger) (cluster.DataPlane, error) {
	return func(log logr.Logger) (cluster.DataPlane, error) { return haproxy.New(o, log) }
}

// honestClaims are what each data plane's configuration can express
// (docs/calibration.md has the directive behind each).
var honestClaims = map[string][]features.FeatureName{
	"haproxy": append(slices.Clone(bothExpress),
		gwfeatures.SupportHTTPRouteBackendProtocolH2C,
		features.SupportHTTPRouteRetryStreamReset,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionTunnelTimeout,
		features.SupportConnectionClientFinTimeout,
		features.SupportConnectionServerFinTimeout,
		features.SupportHTTPRouteRetryRefusedToOtherEndpoint,
	),
	"nginx": bothExpress,
}

// bothExpress are the features both data planes' configurations express.
var bothExpress = []features.FeatureName{
	gwfeatures.SupportGateway,
	gwfeatures.SupportHTTPRoute,
	features.SupportHTTPRouteRetry,
	features.SupportHTTPRouteRetryCodes,
	gwfeatures.SupportHTTPRouteRequestTimeout,
	gwfeatures.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteRetryBackendTimeout,
	features.SupportHTTPRouteRetryCancelsTimedOutAttempt,
	gwfeatures.SupportHTTPRouteRetryConnectionError,
	features.SupportHTTPRouteRetryConnectionErrorAttempts,
	features.SupportHTTPRouteRetryNonIdempotent,
	features.SupportHTTPRouteRetryLastStatus,
	features.SupportHTTPRouteTimeout504,
	features.SupportFaultFidelityTruncation,
	features.SupportFaultFidelitySingleAttempt,
	features.SupportFaultFidelityStreaming,
	features.SupportConnectionServerTimeout,
	features.SupportConnectionClientTimeout,
}

func newNginx(o nginx.Options) func(logr.Logger) (cluster.DataPlane, error) {
	return func(log logr.Logger) (cluster.DataPlane, error) { return nginx.New(o, log) }
}

var variants = []Variant{
	{DataPlane: "haproxy", Name: "honest", New: newHAProxy(haproxy.Options{}),
		About: "HAProxy 2.6 with option http-buffer-request and option http-no-delay, claiming what its configuration expresses"},
	{DataPlane: "haproxy", Name: "no-http-buffer-request", New: newHAProxy(haproxy.Options{NoHTTPBufferRequest: true}),
		About:  "HAProxy as many run it, without option http-buffer-request: the first attempt starts once the headers are in",
		Expect: haproxyNoBuffer},
	{DataPlane: "haproxy", Name: "over-claim", New: newHAProxy(haproxy.Options{}),
		About: "the honest configuration claiming what HAProxy lacks: retry backoff, deadlines, a request timeout over the retries, half-open tunnels",
		Extra: []features.FeatureName{features.SupportHTTPRouteRetryBackoff, features.SupportHTTPRouteTimeoutDeadlines,
			features.SupportHTTPRouteRetryWithRequestTimeout, features.SupportConnectionClientFinHalfOpen},
		Expect: haproxyOverClaim, Tests: testsOf(haproxyOverClaim)},
	{DataPlane: "nginx", Name: "honest", New: newNginx(nginx.Options{}),
		About: "nginx 1.22 with proxy_http_version 1.1 upstream, claiming what its configuration expresses"},
	{DataPlane: "nginx", Name: "http10-buffered", New: newNginx(nginx.Options{HTTP10Upstream: true}),
		About:  "nginx with its defaults upstream: proxy_http_version 1.0 and proxy_buffering on",
		Expect: nginxHTTP10},
	{DataPlane: "nginx", Name: "over-claim", New: newNginx(nginx.Options{}),
		About: "the honest configuration claiming what nginx lacks: retry backoff, deadlines, a request timeout over the retries, h2c backends",
		Extra: []features.FeatureName{features.SupportHTTPRouteRetryBackoff, features.SupportHTTPRouteTimeoutDeadlines,
			features.SupportHTTPRouteRetryWithRequestTimeout, gwfeatures.SupportHTTPRouteBackendProtocolH2C, features.SupportHTTPRouteRetryStreamReset},
		Expect: nginxOverClaim, Tests: testsOf(nginxOverClaim)},
}

func testsOf(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Test
	}
	return out
}
