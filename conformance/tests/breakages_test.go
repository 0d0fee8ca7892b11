package tests_test

import (
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
