package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// Features of the GATEWITNESS-GRPC-DEADLINES profile: GRPCRoute timeouts
// (GEP-3139).
const (
	// SupportGRPCRouteMaxStreamDuration (GEP-3139's name): a GRPCRoute
	// rule's timeouts.maxStreamDuration ends every kind of call that
	// outlives it with a non-OK status, no earlier than the limit and
	// promptly after it, even while messages keep flowing; 0s means no
	// limit.
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

// grpcStreamDurationGEP is GEP-3139, "GRPCRoute timeouts" (status
// Implementable): it adds rules[].timeouts.maxStreamDuration and
// strictEnforcement to GRPCRoute and names the features
// GRPCRouteMaxStreamDuration and GRPCRouteStrictEnforcement, at support
// level Extended. No gateway-api release (v1.6.3 included) has the fields
// or the features yet, so gatewitness defines them under the GEP's names.
const grpcStreamDurationGEP = 3139

// grpcDeadlineFeatures are the features of GATEWITNESS-GRPC-DEADLINES. The
// last three are gatewitness's finer features: the stricter parts of the
// behaviour, so that a data plane that ends calls in time but in another
// way gets a separate verdict for each part.
var grpcDeadlineFeatures = []Feature{
	{
		Name: SupportGRPCRouteMaxStreamDuration, Channels: experimentalInEveryRelease, Level: LevelExtended, GEP: grpcStreamDurationGEP,
		DependsOn: []FeatureName{gwfeatures.SupportGRPCRoute},
		Description: "Ends any call (unary or streaming) that outlives the rule's timeouts.maxStreamDuration with a non-OK status, " +
			"not before the limit and promptly after it, even while messages keep flowing; 0s means no limit.",
	},
	{
		Name: SupportGRPCRouteStrictEnforcement, Channels: experimentalInEveryRelease, Level: LevelExtended, GEP: grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Description: "Bounds a call by timeouts.strictEnforcement: Allow, the stricter of maxStreamDuration and the client's grpc-timeout; Deny, the client's grpc-timeout when present.",
	},
	{
		Name: SupportGRPCRouteMaxStreamDurationDeadlineExceeded, Channels: experimentalInEveryRelease, Level: LevelExtended, GEP: grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Description: "Ends a call at its bound with DEADLINE_EXCEEDED: trailers-only before response headers, trailers after whole messages once headers were sent.",
	},
	{
		Name: SupportGRPCRouteTimeoutPropagation, Channels: experimentalInEveryRelease, Level: LevelImplementationSpecific, GEP: grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Description: "Sends the backend a grpc-timeout no larger than the call's remaining bound, as maxStreamDuration, strictEnforcement and the client's grpc-timeout choose it.",
	},
	{
		Name: SupportGRPCRouteMaxStreamDurationCancelsBackend, Channels: experimentalInEveryRelease, Level: LevelImplementationSpecific, GEP: grpcStreamDurationGEP,
		DependsOn:   []FeatureName{SupportGRPCRouteMaxStreamDuration},
		Description: "Ends the backend's stream of a call when the call's maxStreamDuration runs out, as the backend sees it.",
	},
}
