package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// Connection-level proxy timeouts: how long a gateway holds connections
// open, as a cluster admin tunes it for the whole gateway (OpenShift's
// ingress spec.tuningOptions; HAProxy's "timeout client", "client-fin",
// "server", "server-fin", "tunnel" and "tcp-request inspect-delay").
// Gateway API has no field for them, so every one is implementation
// specific: the tests take the configured values as suite options. See
// docs/semantics/connection-timeouts.md.
const (
	// SupportConnectionServerTimeout: a backend silent for longer than the
	// server timeout gets the client 504, at about that time.
	SupportConnectionServerTimeout FeatureName = "ConnectionServerTimeout"
	// SupportConnectionClientTimeout: an idle client connection, and one
	// that stalls in the middle of a request, are closed at about the
	// client timeout.
	SupportConnectionClientTimeout FeatureName = "ConnectionClientTimeout"
	// SupportConnectionTunnelTimeout: an idle upgraded connection
	// (WebSocket) is closed at about the tunnel timeout, which overrides
	// the client and server timeouts, while an active one stays open.
	SupportConnectionTunnelTimeout FeatureName = "ConnectionTunnelTimeout"
	// SupportConnectionClientFinTimeout: after the backend half-closes a
	// tunnel, no side of it outlives the client-fin timeout (closing at
	// once is allowed).
	SupportConnectionClientFinTimeout FeatureName = "ConnectionClientFinTimeout"
	// SupportConnectionClientFinHalfOpen: after the backend half-closes a
	// tunnel, the gateway keeps it half-open until the client-fin timeout,
	// and closes it then.
	SupportConnectionClientFinHalfOpen FeatureName = "ConnectionClientFinHalfOpen"
	// SupportConnectionServerFinTimeout: after the client half-closes a
	// tunnel, the idle backend side is closed at about the server-fin
	// timeout.
	SupportConnectionServerFinTimeout FeatureName = "ConnectionServerFinTimeout"
	// SupportConnectionTLSInspectDelay: on a TLS passthrough listener, a
	// client that sends no ClientHello is closed at about the inspect
	// delay, without a backend connection.
	SupportConnectionTLSInspectDelay FeatureName = "ConnectionTLSInspectDelay"
)

// connectionFeatures are the features of GATEWITNESS-CONNECTION-TIMEOUTS.
var connectionFeatures = []Feature{
	{Name: SupportConnectionServerTimeout, Channels: standardInEveryRelease, Level: LevelImplementationSpecific,
		Description: "A backend silent for longer than the gateway's server timeout gets the client 504 Gateway Timeout, no earlier than the timeout and within the tolerance after it."},
	{Name: SupportConnectionClientTimeout, Channels: standardInEveryRelease, Level: LevelImplementationSpecific,
		Description: "A client connection that sends nothing, or stops in the middle of its request headers, is closed by the gateway at its client timeout."},
	{Name: SupportConnectionTunnelTimeout, Channels: standardInEveryRelease, Level: LevelImplementationSpecific, DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
		Description: "An idle WebSocket through the gateway is closed at its tunnel timeout, not at the shorter client or server timeout, while a WebSocket with traffic stays open past it."},
	{Name: SupportConnectionClientFinTimeout, Channels: standardInEveryRelease, Level: LevelImplementationSpecific, DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
		Description: "After the backend half-closes a WebSocket, the client gets the FIN (or the close), and no side of the tunnel outlives the gateway's client-fin timeout; closing at once is allowed."},
	{Name: SupportConnectionClientFinHalfOpen, Channels: standardInEveryRelease, Level: LevelImplementationSpecific, DependsOn: []FeatureName{SupportConnectionClientFinTimeout},
		Description: "After the backend half-closes a WebSocket, the gateway passes the FIN on and keeps the tunnel half-open until its client-fin timeout, then closes it."},
	{Name: SupportConnectionServerFinTimeout, Channels: standardInEveryRelease, Level: LevelImplementationSpecific, DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
		Description: "After the client half-closes a WebSocket, the gateway passes the FIN on and closes the idle backend side (and the tunnel) at its server-fin timeout, not earlier: the backend may still be answering."},
	{Name: SupportConnectionTLSInspectDelay, Channels: standardInEveryRelease, Level: LevelImplementationSpecific, DependsOn: []FeatureName{gwfeatures.SupportTLSRoute},
		Description: "On a TLS passthrough listener, a client that connects and sends no ClientHello is closed at the gateway's TLS inspect delay, and no backend connection is made."},
}
