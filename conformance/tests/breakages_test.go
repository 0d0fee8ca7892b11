package tests_test

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/gateway/dataplane"
)

// breakages are the deliberately broken reference gateways the negative
// checks of this package run conformance tests against (see
// TestNegativeHelper). Each names the behaviour it breaks.
var breakages = map[string]runner.ReferenceGateway{
	// GRPCRoute timeouts (GEP-3139).
	"grpc-max-stream-duration-ignored": {MutateConfig: eachGRPCRule(func(r *dataplane.GRPCRule) { r.MaxStreamDuration = 0 })},
	"grpc-strict-enforcement-inverted": {MutateConfig: eachGRPCRule(func(r *dataplane.GRPCRule) { r.StrictDeny = !r.StrictDeny })},
	"grpc-client-timeout-ignored":      {DataPlane: func(o *dataplane.Options) { o.GRPCTimeoutFaults.IgnoreClientTimeout = true }},
	"grpc-looser-timeout-wins":         {DataPlane: func(o *dataplane.Options) { o.GRPCTimeoutFaults.LooserWins = true }},
	"grpc-unavailable-on-expiry":       {DataPlane: func(o *dataplane.Options) { o.GRPCTimeoutFaults.UnavailableOnExpiry = true }},
	"grpc-no-timeout-propagation":      {DataPlane: func(o *dataplane.Options) { o.GRPCTimeoutFaults.NoTimeoutPropagation = true }},
	// HTTPRoute retries and timeouts (GEP-1731, GEP-1742); the mutations
	// are in httproute_negative_test.go.
	"http-retries-off":                 {MutateConfig: eachHTTPRule(func(r *dataplane.HTTPRule) { r.Retry = nil })},
	"http-retry-backoff-ignored":       {MutateConfig: eachHTTPRule(withRetry(noBackoff))},
	"http-retry-codes-ignored":         {MutateConfig: eachHTTPRule(withRetry(func(r *gwv1.HTTPRouteRetry) { r.Codes = nil }))},
	"http-retry-every-5xx":             {MutateConfig: eachHTTPRule(withRetry(func(r *gwv1.HTTPRouteRetry) { r.Codes = everyStatus5xx() }))},
	"http-backend-timeout-ignored":     {MutateConfig: eachHTTPRule(ignoreBackendTimeout)},
	"http-request-timeout-per-attempt": {MutateConfig: eachHTTPRule(requestTimeoutPerAttempt)},
	// Connection-level timeouts (connection_timeouts_test.go).
	"conn-server-timeout-ignored":     {MutateConfig: eachGateway(func(c *dataplane.ConnectionTimeouts) { c.Server = 0 })},
	"conn-client-timeout-ignored":     {MutateConfig: eachGateway(func(c *dataplane.ConnectionTimeouts) { c.Client = 0 })},
	"conn-tunnel-timeout-ignored":     {MutateConfig: eachGateway(func(c *dataplane.ConnectionTimeouts) { c.Tunnel = 0 })},
	"conn-client-fin-timeout-ignored": {MutateConfig: eachGateway(func(c *dataplane.ConnectionTimeouts) { c.ClientFin = 0 })},
	"conn-server-fin-timeout-ignored": {MutateConfig: eachGateway(func(c *dataplane.ConnectionTimeouts) { c.ServerFin = 0 })},
	"conn-tls-inspect-delay-ignored":  {MutateConfig: eachGateway(func(c *dataplane.ConnectionTimeouts) { c.TLSInspectDelay = 0 })},
}

// eachGRPCRule returns a MutateConfig that applies f to every GRPCRoute rule
// of a snapshot.
func eachGRPCRule(f func(*dataplane.GRPCRule)) func(*dataplane.Config) {
	return func(cfg *dataplane.Config) {
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
