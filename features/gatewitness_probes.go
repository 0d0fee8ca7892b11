package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// Features of health probes through a mesh's sidecar: a pod's readiness,
// and so the Gateway's traffic to it, must follow the application's health
// as the kubelet's probes see it, even when a sidecar captures the pod's
// inbound traffic. They are mesh-side features: the Gateway only has to
// send traffic to ready endpoints (which every GATEWAY-HTTP implementation
// does); the sidecar and its injector are what is tested, and a run in
// which no mesh is in the probes' path skips the tests. See
// docs/semantics/probes.md.
const (
	// SupportMeshProbeHTTP: an httpGet readiness probe fails when the app
	// answers it with an error status, through the mesh's sidecar.
	SupportMeshProbeHTTP FeatureName = "MeshProbeHTTP"
	// SupportMeshProbeTCP: a tcpSocket readiness probe fails when the
	// app's port is closed, even though a sidecar could accept the
	// connection itself.
	SupportMeshProbeTCP FeatureName = "MeshProbeTCP"
	// SupportMeshProbeGRPC: a grpc readiness probe fails when the app's
	// health service answers NOT_SERVING for the probe's service.
	SupportMeshProbeGRPC FeatureName = "MeshProbeGRPC"
	// SupportMeshProbeRewrite: probes on named ports, with custom headers,
	// in a pod that already uses the ports a mesh prefers for its probe
	// listener, still follow the app's health.
	SupportMeshProbeRewrite FeatureName = "MeshProbeRewrite"
)

// meshProbeFeatures are the features of GATEWITNESS-MESH-PROBES.
var meshProbeFeatures = []Feature{
	{Name: SupportMeshProbeHTTP, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		Description: "In a Pod whose probes a mesh intercepts, an httpGet readiness probe fails when the app answers with an error status, so the Pod leaves the Gateway's rotation within periodSeconds × failureThreshold, and returns when the app recovers."},
	{Name: SupportMeshProbeTCP, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		Description: "In a Pod whose probes a mesh intercepts, a tcpSocket readiness probe fails when the app's port is closed, though the sidecar could accept the connection, so the Pod leaves the Gateway's rotation in time, and returns when the port reopens."},
	{Name: SupportMeshProbeGRPC, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute},
		Description: "In a Pod whose probes a mesh intercepts, a grpc readiness probe fails when the app's health service answers NOT_SERVING for the probe's service, so the Pod leaves the GRPCRoute's rotation in time, and returns when it serves again."},
	{Name: SupportMeshProbeRewrite, Channels: standardInEveryRelease, Level: LevelExtended, DependsOn: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute},
		Description: "In a Pod whose probes a mesh intercepts, readiness probes on named ports with custom headers, in a Pod that already uses the mesh's usual probe ports, still follow the app's health."},
}
