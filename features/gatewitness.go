package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// gatewitness's own features and profiles, as package-level data in the style
// of upstream's pkg/features: one list of profiles and one list of features
// per area (this file and gatewitness_*.go). The registry is built from the
// lists once, when the package initialises (see init in features.go), so
// nothing depends on the order in which files or packages initialise.
//
// Where upstream already names a behaviour (HTTPRouteRetry,
// HTTPRouteRequestTimeout, ...), a test lists the upstream name; where the
// two supported releases differ, see releases.go. Every gatewitness test
// also lists at least one feature of gatewitness's own: no upstream profile
// contains those, so a gatewitness test is never counted in an upstream
// profile, and a failure of gatewitness's stricter reading can never change
// an implementer's upstream result.

// gatewitness's own conformance profiles, registered with the upstream suite.
const (
	// ProfileHTTPResilience covers HTTPRoute timeouts and retries.
	ProfileHTTPResilience = "GATEWITNESS-HTTP-RESILIENCE"
	// ProfileGRPCDeadlines covers gRPC deadlines and stream durations
	// through GRPCRoutes.
	ProfileGRPCDeadlines = "GATEWITNESS-GRPC-DEADLINES"
	// ProfileConnectionTimeouts covers the connection-level proxy timeouts.
	ProfileConnectionTimeouts = "GATEWITNESS-CONNECTION-TIMEOUTS"
	// ProfileMeshProbes covers health probes through a mesh's sidecar.
	ProfileMeshProbes = "GATEWITNESS-MESH-PROBES"
	// ProfileRetryBudgets covers retry budgets on backends
	// (XBackendTrafficPolicy retryConstraint) and retries under load.
	ProfileRetryBudgets = "GATEWITNESS-RETRY-BUDGETS"
	// ProfileFaultFidelity covers what clients see when a backend fails
	// mid-response, and streaming through the gateway.
	ProfileFaultFidelity = "GATEWITNESS-FAULT-FIDELITY"
)

// gatewitnessProfiles are gatewitness's profiles. Core lists the features an
// implementation claiming the profile must support; Extended lists the
// upstream features the profile's tests also need (a test is counted in a
// profile only when the profile holds every feature the test lists). Each
// gatewitness feature joins its profiles through its Profiles field.
var gatewitnessProfiles = []Profile{
	{
		Name: ProfileHTTPResilience,
		Core: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		// HTTPRouteRetryBackendTimeout is upstream's in v1.6 only; from
		// v1.7 it is gatewitness's own and joins through its area's list.
		Extended: linkedUpstream(
			gwfeatures.SupportHTTPRouteRequestTimeout,
			gwfeatures.SupportHTTPRouteBackendTimeout,
			SupportHTTPRouteRetry,
			SupportHTTPRouteRetryBackendTimeout,
			gwfeatures.SupportHTTPRouteRetryConnectionError,
			// HTTPRouteRetryStreamReset retries a reset HTTP/2 stream.
			gwfeatures.SupportHTTPRouteBackendProtocolH2C,
		),
	},
	{
		Name: ProfileGRPCDeadlines,
		Core: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute},
	},
	{
		Name: ProfileConnectionTimeouts,
		Core: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		// The tunnel and fin timeouts are tested on WebSockets.
		Extended: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
	},
	{
		Name: ProfileMeshProbes,
		Core: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		// MeshProbeGRPC routes its traffic with a GRPCRoute.
		Extended: []FeatureName{gwfeatures.SupportGRPCRoute},
	},
	{
		Name: ProfileRetryBudgets,
		Core: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetry},
	},
	{
		Name: ProfileFaultFidelity,
		Core: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		// The gRPC tests route their calls with GRPCRoutes.
		Extended: []FeatureName{gwfeatures.SupportGRPCRoute},
	},
}
