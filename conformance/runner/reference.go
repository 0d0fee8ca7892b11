package runner

import (
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

// referenceProfiles are the upstream profiles whose core features the
// reference gateway supports in full: Gateway, HTTPRoute, GRPCRoute and
// ReferenceGrant.
var referenceProfiles = []string{"GATEWAY-HTTP", "GATEWAY-GRPC"}

// referenceExtended lists the extended features the reference gateway's
// data plane implements. This is the one place the list is kept: the
// in-process run tests exactly these (plus the core features above), and
// the in-process GatewayClass publishes them in its status. Add a feature
// here in the same change that implements it in gateway/, and not before:
// a feature listed here is claimed in every in-process report.
var referenceExtended = []features.FeatureName{
	gwfeatures.SupportGatewayPort8080,                           // listeners on any port
	gwfeatures.SupportHTTPRouteQueryParamMatching,               // compile.go: query matches
	gwfeatures.SupportHTTPRouteMethodMatching,                   // compile.go: method matches
	gwfeatures.SupportHTTPRouteResponseHeaderModification,       // filters.go
	gwfeatures.SupportHTTPRouteBackendRequestHeaderModification, // Backend.Filters
	gwfeatures.SupportHTTPRoutePortRedirect,                     // redirectLocation
	gwfeatures.SupportHTTPRouteSchemeRedirect,                   // redirectLocation
	gwfeatures.SupportHTTPRoutePathRedirect,                     // redirectLocation
	gwfeatures.SupportHTTPRoute303RedirectStatusCode,            // handler.go: any statusCode
	gwfeatures.SupportHTTPRoute307RedirectStatusCode,
	gwfeatures.SupportHTTPRoute308RedirectStatusCode,
	gwfeatures.SupportHTTPRouteHostRewrite,                // URLRewrite
	gwfeatures.SupportHTTPRoutePathRewrite,                // URLRewrite
	gwfeatures.SupportHTTPRouteRequestMirror,              // filters.go: mirrors
	gwfeatures.SupportHTTPRouteRequestMultipleMirrors,     // filters.go: mirrors
	gwfeatures.SupportHTTPRouteRequestPercentageMirror,    // filters.go: percent and fraction
	gwfeatures.SupportHTTPRouteRequestTimeout,             // GEP-1742 timeouts.request
	gwfeatures.SupportHTTPRouteBackendTimeout,             // GEP-1742 timeouts.backendRequest
	features.SupportHTTPRouteRetry,                        // GEP-1731 retry.go
	features.SupportHTTPRouteRetryBackendTimeout,          // retry.go: timed-out attempts retried
	gwfeatures.SupportHTTPRouteRetryConnectionError,       // retry.go: connection errors retried
	features.SupportHTTPRouteRetryCodes,                   // retry.go: retriesStatus
	features.SupportHTTPRouteRetryBackoff,                 // retry.go: wait
	features.SupportHTTPRouteRetryWithRequestTimeout,      // retry.go: exchange under timeouts.request
	features.SupportHTTPRouteRetryLastStatus,              // retry.go: finish relays the last answer
	features.SupportHTTPRouteTimeout504,                   // retry.go: answerEnd, finish
	features.SupportHTTPRouteRetryConnectionErrorAttempts, // retry.go: retryReason, forbidTransportResend
	features.SupportHTTPRouteRetryStreamReset,             // retry.go: retryReason (a stream error is a connection error)
	features.SupportHTTPRouteRetryRefusedToOtherEndpoint,  // retry.go: retries go round-robin to the next endpoint
	features.SupportHTTPRouteRetryCancelsTimedOutAttempt,  // retry.go, timeouts.go: attemptContext
	features.SupportHTTPRouteRetryNonIdempotent,           // retry.go: bufferBody replays any method's body
	features.SupportHTTPRouteTimeoutDeadlines,             // handler.go, timeouts.go: context deadlines
	gwfeatures.SupportHTTPRouteParentRefPort,              // controller/attach.go
	gwfeatures.SupportHTTPRouteBackendProtocolH2C,         // appProtocol kubernetes.io/h2c
	gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,   // protocol upgrades
	gwfeatures.SupportHTTPRouteNamedRouteRule,             // rule names
	gwfeatures.SupportHTTPRouteCORS,                       // filters.go: corsPolicy
	gwfeatures.SupportGRPCRouteNamedRouteRule,             // rule names
	// GEP-3139 GRPCRoute timeouts: dataplane/grpc_proxy.go, grpc_timeouts.go.
	features.SupportGRPCRouteMaxStreamDuration,
	features.SupportGRPCRouteStrictEnforcement,
	features.SupportGRPCRouteMaxStreamDurationDeadlineExceeded,
	features.SupportGRPCRouteTimeoutPropagation,
	features.SupportGRPCRouteMaxStreamDurationCancelsBackend,
	// Connection-level timeouts from the GatewayClass's parametersRef:
	// controller/tuning.go, dataplane/conntimeouts.go, tunnel.go.
	features.SupportConnectionServerTimeout,
	features.SupportConnectionClientTimeout,
	features.SupportConnectionTunnelTimeout,
	features.SupportConnectionClientFinTimeout,
	features.SupportConnectionClientFinHalfOpen, // tunnel.go: the FIN passed on, the client side bounded by ClientFin
	features.SupportConnectionServerFinTimeout,
	// Readiness probes run by the pod runner, with and without the probe
	// proxy: internal/probe, gateway/probeproxy, cluster/pods.
	features.SupportMeshProbeHTTP,
	features.SupportMeshProbeTCP,
	features.SupportMeshProbeGRPC,
	features.SupportMeshProbeRewrite,
	// TLS passthrough: controller/listeners.go, dataplane/passthrough.go.
	// The upstream TLSRoute feature is not claimed: its data-plane tests
	// dial the Gateway's published address directly, which nothing
	// listens on in-process (see docs/semantics/connection-timeouts.md).
	features.SupportConnectionTLSInspectDelay,
	// Fault fidelity: dataplane/proxy.go (abortRelayed: what arrived is
	// relayed before a failure; streamed bodies flushed as they come),
	// grpc_proxy.go (each message flushed; a failed stream reset).
	features.SupportFaultFidelityTruncation,
	features.SupportFaultFidelitySingleAttempt,
	features.SupportFaultFidelityRelayHeaders,
	features.SupportFaultFidelityStreaming,
	// Retry budgets (XBackendTrafficPolicy retryConstraint):
	// controller/retrybudget.go, dataplane/retrybudget.go.
	features.SupportBackendRetryBudget,
	features.SupportBackendRetryBudgetMinRetryRate,
	features.SupportBackendRetryBudgetPerBackend,
}

// ReferenceFeatures returns the features the in-process reference gateway
// supports: the core features of the GATEWAY-HTTP and GATEWAY-GRPC
// profiles and the extended features its data plane implements, sorted.
// An in-process run tests these unless --supported-features or
// --all-features says otherwise.
func ReferenceFeatures() []features.FeatureName {
	var out []features.FeatureName
	for _, name := range referenceProfiles {
		p, ok := features.LookupProfile(name)
		if !ok {
			panic("runner: the features registry has no profile " + name)
		}
		out = append(out, p.Core...)
	}
	out = append(out, referenceExtended...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ReferenceFeaturesOn returns the features the in-process reference
// gateway claims when it serves the CRDs of the Gateway API release
// channel: on the experimental channel, ReferenceFeatures; on the standard
// channel, those less every feature of the experimental channel (as the
// features registry has it for the linked release: its fields are in the
// experimental CRDs only, such as HTTPRoute's retry in v1.6 or
// XBackendTrafficPolicy) and less every feature that depends on one. An
// implementation that installs the standard channel cannot claim what its
// CRDs refuse to store.
func ReferenceFeaturesOn(channel features.Channel) []features.FeatureName {
	all := ReferenceFeatures()
	if channel == features.ChannelExperimental {
		return all
	}
	out := all[:0:0]
	for _, name := range all {
		if onChannel(name, channel, map[features.FeatureName]bool{}) {
			out = append(out, name)
		}
	}
	return out
}

// onChannel reports whether name and every feature it depends on, however
// indirectly, are features of channel. A name the registry does not know
// is not.
func onChannel(name features.FeatureName, channel features.Channel, seen map[features.FeatureName]bool) bool {
	if seen[name] {
		return true // a cycle; features.Validate refuses them
	}
	seen[name] = true
	f, ok := features.Lookup(name)
	if !ok || f.Channel != channel {
		return false
	}
	for _, d := range f.DependsOn {
		if !onChannel(d, channel, seen) {
			return false
		}
	}
	return true
}

// profileOnChannel reports whether every core feature of the profile name
// is a feature of channel (any is, on the experimental channel): a run
// that requests a profile claims its core features.
func profileOnChannel(name string, channel features.Channel) bool {
	if channel == features.ChannelExperimental {
		return true
	}
	p, ok := features.LookupProfile(name)
	if !ok {
		return false
	}
	for _, f := range p.Core {
		if !onChannel(f, channel, map[features.FeatureName]bool{}) {
			return false
		}
	}
	return true
}

// AllTests returns the tests a run chooses from: upstream's conformance
// tests followed by gatewitness's.
func AllTests() []suite.ConformanceTest {
	out := make([]suite.ConformanceTest, 0, len(tests.ConformanceTests)+len(gctests.ConformanceTests))
	out = append(out, tests.ConformanceTests...)
	return append(out, gctests.ConformanceTests...)
}

// ReferenceClassFeatures is what a GatewayClass of the reference gateway
// publishes in status.supportedFeatures when it runs on its own (gatewitness
// gateway, localcp): ReferenceFeatures as features.ForGatewayClassStatus
// chooses them, upstream's first, at most features.MaxGatewayClassFeatures.
func ReferenceClassFeatures() []gwv1.FeatureName {
	published, _ := features.ForGatewayClassStatus(ReferenceFeatures())
	out := make([]gwv1.FeatureName, len(published))
	for i, f := range published {
		out[i] = gwv1.FeatureName(f)
	}
	return out
}
