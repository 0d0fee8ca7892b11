package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// Fault fidelity: what a client sees when the backend fails in the middle
// of a response, and whether streamed responses and request streams pass
// through the gateway as they flow. Gateway API says nothing of either;
// HTTP does (RFC 9112 sections 6.3 and 8, RFC 9113 sections 5.4 and 8.1,
// gRPC's status codes and its HTTP/2 protocol). See
// docs/semantics/fault-fidelity.md.
const (
	// SupportFaultFidelityTruncation: a response whose backend fails after
	// it started reaches the client as an incomplete response (HTTP/1.1:
	// fewer bytes than its Content-Length, or no last-chunk, then a
	// close; HTTP/2: a reset stream; gRPC: a non-OK status), never as a
	// complete one.
	SupportFaultFidelityTruncation FeatureName = "FaultFidelityTruncation"
	// SupportFaultFidelitySingleAttempt: a request whose response fails
	// mid-way on a route without retries reaches the backend once, even
	// through a client that resends a request answered by an empty reply;
	// the client sees the failure (an HTTP/2 stream reset before its
	// HEADERS is one).
	SupportFaultFidelitySingleAttempt FeatureName = "FaultFidelitySingleAttempt"
	// SupportFaultFidelityRelayHeaders, finer: the status and headers the
	// backend sent before failing reach the client, before the failure.
	SupportFaultFidelityRelayHeaders FeatureName = "FaultFidelityRelayHeaders"
	// SupportFaultFidelityStreaming: every chunk of a streamed response
	// (chunked, HTTP/2 DATA, server-sent events, gRPC messages) reaches
	// the client, and every message of a gRPC request stream the backend,
	// within the tolerance of being sent.
	SupportFaultFidelityStreaming FeatureName = "FaultFidelityStreaming"
)

// faultFidelityFeatures are the features of GATEWITNESS-FAULT-FIDELITY.
var faultFidelityFeatures = []Feature{
	{Name: SupportFaultFidelityTruncation, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		Description: "A response whose backend fails after sending its headers or part of its body reaches the client as an incomplete response: over HTTP/1.1 fewer bytes than its Content-Length or no last-chunk, then a closed connection; over HTTP/2 a reset stream, never END_STREAM; a gRPC call ends with a non-OK status, never OK."},
	{Name: SupportFaultFidelitySingleAttempt, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		Description: "A request whose backend fails mid-response, on a route without retries, reaches the backend exactly once, even through a client that resends a request answered by an empty reply; the response, or its failure, reaches the client (an HTTP/2 stream reset before its HEADERS is allowed)."},
	{Name: SupportFaultFidelityRelayHeaders, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{SupportFaultFidelitySingleAttempt},
		Description: "The status and headers a backend sent before failing mid-response reach the client before the failure, rather than being replaced by the gateway's own error."},
	{Name: SupportFaultFidelityStreaming, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		Description: "Each chunk a backend flushes (HTTP/1.1 chunked, HTTP/2, server-sent events, gRPC server-stream messages) reaches the client, and a gRPC client or bidirectional stream's first message the backend before the client half-closes, within the timing tolerance of being sent: the gateway holds no stream until it ends."},
}
