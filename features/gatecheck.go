package features

import (
	"fmt"

	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// gatecheck's own features. Where upstream already names a behaviour
// (HTTPRouteRetry, HTTPRouteRetryConnectionError, HTTPRouteRequestTimeout,
// ...), gatecheck uses the upstream name and does not define its own; where
// the two supported releases differ, see releases.go.
const (
	// SupportHTTPRouteRetryCodes: a rule's retry.codes is honoured exactly;
	// listed codes are retried and other codes are not. gatecheck's own
	// feature in v1.6; from v1.7 upstream's, which names retries on status
	// codes so.
	SupportHTTPRouteRetryCodes FeatureName = "HTTPRouteRetryCodes"
	// SupportHTTPRouteRetryBackoff: consecutive attempts are at least
	// retry.backoff apart, as measured by the backend.
	SupportHTTPRouteRetryBackoff FeatureName = "HTTPRouteRetryBackoff"
	// SupportHTTPRouteRetryWithRequestTimeout: timeouts.request bounds the
	// whole retried exchange, all attempts included.
	SupportHTTPRouteRetryWithRequestTimeout FeatureName = "HTTPRouteRetryWithRequestTimeout"
	// SupportGRPCRouteMaxStreamDuration (GEP-3139's name): a GRPCRoute
	// rule's timeouts.maxStreamDuration ends every kind of call that
	// outlives it with a non-OK status, no earlier than the limit and
	// promptly after it; 0s means no limit.
	SupportGRPCRouteMaxStreamDuration FeatureName = "GRPCRouteMaxStreamDuration"
	// SupportGRPCRouteStrictEnforcement (GEP-3139's name): a GRPCRoute
	// rule's timeouts.strictEnforcement chooses the call's bound: Allow the
	// stricter of maxStreamDuration and the client's grpc-timeout, Deny the
	// client's grpc-timeout when the call carries one.
	SupportGRPCRouteStrictEnforcement FeatureName = "GRPCRouteStrictEnforcement"
	// SupportGRPCRouteMaxStreamDurationDeadlineExceeded: a call ended by its
	// bound gets DEADLINE_EXCEEDED, as a trailers-only response before the
	// response headers and as trailers after whole messages once they were
	// sent.
	SupportGRPCRouteMaxStreamDurationDeadlineExceeded FeatureName = "GRPCRouteMaxStreamDurationDeadlineExceeded"
	// SupportGRPCRouteTimeoutPropagation: the backend receives a
	// grpc-timeout no larger than the call's remaining bound, as chosen by
	// maxStreamDuration, strictEnforcement and the client's grpc-timeout.
	SupportGRPCRouteTimeoutPropagation FeatureName = "GRPCRouteTimeoutPropagation"
	// SupportGRPCRouteMaxStreamDurationCancelsBackend: when a call's bound
	// runs out, the backend's stream of the call ends too.
	SupportGRPCRouteMaxStreamDurationCancelsBackend FeatureName = "GRPCRouteMaxStreamDurationCancelsBackend"
)

// gatecheck's own conformance profiles, registered with the upstream suite.
const (
	// ProfileHTTPResilience covers HTTPRoute timeouts and retries.
	ProfileHTTPResilience = "GATECHECK-HTTP-RESILIENCE"
	// ProfileGRPCDeadlines covers gRPC deadlines and stream durations
	// through GRPCRoutes.
	ProfileGRPCDeadlines = "GATECHECK-GRPC-DEADLINES"
)

// grpcStreamDurationGEP is GEP-3139, "GRPCRoute timeouts" (status
// Implementable): it adds rules[].timeouts.maxStreamDuration and
// strictEnforcement to GRPCRoute and names the features
// GRPCRouteMaxStreamDuration and GRPCRouteStrictEnforcement, at support
// level Extended. No gateway-api release (v1.6.3 included) has the fields
// or the features yet, so gatecheck registers them under the GEP's names.
const grpcStreamDurationGEP = 3139

func init() {
	if err := registerUpstream(defaultRegistry); err != nil {
		panic(fmt.Sprintf("features: deriving the upstream features: %v", err))
	}

	// The profile's upstream extended features; in v1.7 HTTPRouteRetry is
	// HTTPRouteRetryCodes, and HTTPRouteRetryBackendTimeout is gatecheck's
	// own, registered below (releases.go).
	resilience := []FeatureName{
		gwfeatures.SupportHTTPRouteRequestTimeout,
		gwfeatures.SupportHTTPRouteBackendTimeout,
		SupportHTTPRouteRetry,
		gwfeatures.SupportHTTPRouteRetryConnectionError,
	}
	if upstreamHas(SupportHTTPRouteRetryBackendTimeout) {
		resilience = append(resilience, SupportHTTPRouteRetryBackendTimeout)
	}
	RegisterProfile(ProfileHTTPResilience,
		[]FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		resilience)
	RegisterProfile(ProfileGRPCDeadlines,
		[]FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute},
		nil)

	if !upstreamHas(SupportHTTPRouteRetryCodes) { // v1.6; v1.7 names the feature itself
		Register(Feature{
			Name:        SupportHTTPRouteRetryCodes,
			Channel:     ChannelExperimental,
			Level:       LevelExtended,
			GEP:         1731,
			DependsOn:   []FeatureName{SupportHTTPRouteRetry},
			Profiles:    []string{ProfileHTTPResilience},
			Description: "Retries exactly the HTTP status codes listed in retry.codes and no others.",
		})
	}
	if !upstreamHas(SupportHTTPRouteRetryBackendTimeout) { // v1.7 dropped it
		Register(Feature{
			Name:        SupportHTTPRouteRetryBackendTimeout,
			Channel:     ChannelExperimental,
			Level:       LevelExtended,
			GEP:         1731,
			DependsOn:   []FeatureName{gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteBackendTimeout},
			Profiles:    []string{ProfileHTTPResilience},
			Description: "Retries an attempt that timeouts.backendRequest cut, like a failed one.",
		})
	}
	Register(Feature{
		Name:        SupportHTTPRouteRetryBackoff,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "Waits at least retry.backoff between attempts, as the backend sees them.",
	})
	Register(Feature{
		Name:        SupportHTTPRouteRetryWithRequestTimeout,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteRequestTimeout},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "Ends a retried request when timeouts.request expires, whatever attempt is in flight.",
	})
	Register(Feature{
		Name:        SupportGRPCRouteMaxStreamDuration,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{gwfeatures.SupportGRPCRoute},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Ends any call (unary or streaming) that outlives the rule's timeouts.maxStreamDuration with a non-OK status, not before the limit and promptly after it; 0s means no limit.",
	})
	Register(Feature{
		Name:        SupportGRPCRouteStrictEnforcement,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Bounds a call by timeouts.strictEnforcement: Allow, the stricter of maxStreamDuration and the client's grpc-timeout; Deny, the client's grpc-timeout when present.",
	})
	// gatecheck's finer features for GEP-3139: the stricter parts of the
	// behaviour, so that a data plane that ends calls in time but in
	// another way gets a separate verdict for each part.
	Register(Feature{
		Name:        SupportGRPCRouteMaxStreamDurationDeadlineExceeded,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Ends a call at its bound with DEADLINE_EXCEEDED: trailers-only before response headers, trailers after whole messages once headers were sent.",
	})
	Register(Feature{
		Name:        SupportGRPCRouteTimeoutPropagation,
		Channel:     ChannelExperimental,
		Level:       LevelImplementationSpecific,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Sends the backend a grpc-timeout no larger than the call's remaining bound, as maxStreamDuration, strictEnforcement and the client's grpc-timeout choose it.",
	})
	Register(Feature{
		Name:        SupportGRPCRouteMaxStreamDurationCancelsBackend,
		Channel:     ChannelExperimental,
		Level:       LevelImplementationSpecific,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Ends the backend's stream of a call when the call's maxStreamDuration runs out, as the backend sees it.",
	})
}
