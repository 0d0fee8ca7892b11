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
	// tunnel, the idle client side is closed at about the client-fin
	// timeout.
	SupportConnectionClientFinTimeout FeatureName = "ConnectionClientFinTimeout"
	// SupportConnectionServerFinTimeout: after the client half-closes a
	// tunnel, the idle backend side is closed at about the server-fin
	// timeout.
	SupportConnectionServerFinTimeout FeatureName = "ConnectionServerFinTimeout"
	// SupportConnectionTLSInspectDelay: on a TLS passthrough listener, a
	// client that sends no ClientHello is closed at about the inspect
	// delay, without a backend connection.
	SupportConnectionTLSInspectDelay FeatureName = "ConnectionTLSInspectDelay"
)

// ProfileConnectionTimeouts covers the connection-level proxy timeouts.
const ProfileConnectionTimeouts = "GATECHECK-CONNECTION-TIMEOUTS"

// This file's init runs after gatecheck.go's (files initialise in name
// order).
func init() {
	RegisterProfile(ProfileConnectionTimeouts,
		[]FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		nil)
	for _, f := range []Feature{
		{Name: SupportConnectionServerTimeout, Description: "A backend silent for longer than the gateway's server timeout gets the client 504 Gateway Timeout, no earlier than the timeout and within the tolerance after it."},
		{Name: SupportConnectionClientTimeout, Description: "A client connection that sends nothing, or stops in the middle of its request headers, is closed by the gateway at its client timeout."},
		{Name: SupportConnectionTunnelTimeout, DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
			Description: "An idle WebSocket through the gateway is closed at its tunnel timeout, not at the shorter client or server timeout, while a WebSocket with traffic stays open past it."},
		{Name: SupportConnectionClientFinTimeout, DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
			Description: "After the backend half-closes a WebSocket, the gateway passes the FIN on and closes the idle client side at its client-fin timeout."},
		{Name: SupportConnectionServerFinTimeout, DependsOn: []FeatureName{gwfeatures.SupportHTTPRouteBackendProtocolWebSocket},
			Description: "After the client half-closes a WebSocket, the gateway passes the FIN on and closes the idle backend side (and the tunnel) at its server-fin timeout."},
		{Name: SupportConnectionTLSInspectDelay, DependsOn: []FeatureName{gwfeatures.SupportTLSRoute},
			Description: "On a TLS passthrough listener, a client that connects and sends no ClientHello is closed at the gateway's TLS inspect delay, and no backend connection is made."},
	} {
		f.Channel = ChannelExperimental
		f.Level = LevelImplementationSpecific
		f.Profiles = []string{ProfileConnectionTimeouts}
		Register(f)
	}
}
