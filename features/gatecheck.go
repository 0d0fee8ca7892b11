package features

import (
	"fmt"

	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// gatecheck's own features. Where upstream v1.6.3 already names a behaviour
// (HTTPRouteRetry, HTTPRouteRetryBackendTimeout,
// HTTPRouteRetryConnectionError, HTTPRouteRequestTimeout, ...), gatecheck
// uses the upstream name and does not define its own.
const (
	// SupportHTTPRouteRetryCodes: a rule's retry.codes is honoured exactly;
	// listed codes are retried and other codes are not.
	SupportHTTPRouteRetryCodes FeatureName = "HTTPRouteRetryCodes"
	// SupportHTTPRouteRetryBackoff: consecutive attempts are at least
	// retry.backoff apart, as measured by the backend.
	SupportHTTPRouteRetryBackoff FeatureName = "HTTPRouteRetryBackoff"
	// SupportHTTPRouteRetryWithRequestTimeout: timeouts.request bounds the
	// whole retried exchange, all attempts included.
	SupportHTTPRouteRetryWithRequestTimeout FeatureName = "HTTPRouteRetryWithRequestTimeout"
	// SupportGRPCRouteMaxStreamDuration: a GRPCRoute rule's maximum stream
	// duration ends a longer call with a non-OK status in time.
	SupportGRPCRouteMaxStreamDuration FeatureName = "GRPCRouteMaxStreamDuration"
	// SupportGRPCRouteStrictEnforcement: a call ended by the maximum stream
	// duration gets DEADLINE_EXCEEDED as a trailers-only response.
	SupportGRPCRouteStrictEnforcement FeatureName = "GRPCRouteStrictEnforcement"
)

// gatecheck's own conformance profiles, registered with the upstream suite.
const (
	// ProfileHTTPResilience covers HTTPRoute timeouts and retries.
	ProfileHTTPResilience = "GATECHECK-HTTP-RESILIENCE"
	// ProfileGRPCDeadlines covers gRPC deadlines and stream durations
	// through GRPCRoutes.
	ProfileGRPCDeadlines = "GATECHECK-GRPC-DEADLINES"
)

// grpcStreamDurationGEP is the number the design gives the GRPCRoute
// stream-duration extension. gateway-api v1.6.3 has no GEP document with
// this number yet.
const grpcStreamDurationGEP = 3139

func init() {
	if err := registerUpstream(defaultRegistry); err != nil {
		panic(fmt.Sprintf("features: deriving the upstream features: %v", err))
	}

	RegisterProfile(ProfileHTTPResilience,
		[]FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		[]FeatureName{
			gwfeatures.SupportHTTPRouteRequestTimeout,
			gwfeatures.SupportHTTPRouteBackendTimeout,
			gwfeatures.SupportHTTPRouteRetry,
			gwfeatures.SupportHTTPRouteRetryBackendTimeout,
			gwfeatures.SupportHTTPRouteRetryConnectionError,
		})
	RegisterProfile(ProfileGRPCDeadlines,
		[]FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute},
		nil)

	Register(Feature{
		Name:        SupportHTTPRouteRetryCodes,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         1731,
		DependsOn:   []FeatureName{gwfeatures.SupportHTTPRouteRetry},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "Retries exactly the HTTP status codes listed in retry.codes and no others.",
	})
	Register(Feature{
		Name:        SupportHTTPRouteRetryBackoff,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         1731,
		DependsOn:   []FeatureName{gwfeatures.SupportHTTPRouteRetry},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "Waits at least retry.backoff between attempts, as the backend sees them.",
	})
	Register(Feature{
		Name:        SupportHTTPRouteRetryWithRequestTimeout,
		Channel:     ChannelExperimental,
		Level:       LevelExtended,
		GEP:         1731,
		DependsOn:   []FeatureName{gwfeatures.SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteRequestTimeout},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "Ends a retried request when timeouts.request expires, whatever attempt is in flight.",
	})
	Register(Feature{
		Name:        SupportGRPCRouteMaxStreamDuration,
		Channel:     ChannelExperimental,
		Level:       LevelImplementationSpecific,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{gwfeatures.SupportGRPCRoute},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Ends a call that outlives the rule's maximum stream duration with a non-OK status in time.",
	})
	Register(Feature{
		Name:        SupportGRPCRouteStrictEnforcement,
		Channel:     ChannelExperimental,
		Level:       LevelImplementationSpecific,
		GEP:         grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Profiles:    []string{ProfileGRPCDeadlines},
		Description: "Ends such a call with DEADLINE_EXCEEDED as a trailers-only response.",
	})
}
