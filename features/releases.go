package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// gatewitness builds against both supported Gateway API releases, v1.6.3 (its
// go.mod) and v1.7.0 (an implementer's go.mod; make test-gwapi-v1.7). Their
// retry features differ: v1.7.0 renamed HTTPRouteRetry to
// HTTPRouteRetryCodes (and moved it to the Standard channel) and dropped
// HTTPRouteRetryBackendTimeout. The names that exist in one release only are
// spelled out here rather than taken from the upstream package, so this
// package compiles against both, and the registry takes the linked
// release's view when the program starts.

// upstreamHTTPRouteRetryV16 is v1.6's name of the HTTPRoute retry feature.
const upstreamHTTPRouteRetryV16 FeatureName = "HTTPRouteRetry"

// SupportHTTPRouteRetryBackendTimeout: an attempt cut by
// timeouts.backendRequest is retried like a failed one. It is an upstream
// feature in v1.6 and gatewitness's own from v1.7, which dropped it.
const SupportHTTPRouteRetryBackendTimeout FeatureName = "HTTPRouteRetryBackendTimeout"

// SupportHTTPRouteRetry is the upstream feature for HTTPRoute retries in the
// linked release: HTTPRouteRetry in v1.6, HTTPRouteRetryCodes from v1.7.
// Tests that need retries at all list it.
var SupportHTTPRouteRetry = linkedRetryFeature()

func linkedRetryFeature() FeatureName {
	if upstreamHas(upstreamHTTPRouteRetryV16) {
		return upstreamHTTPRouteRetryV16
	}
	return SupportHTTPRouteRetryCodes
}

// upstreamHas reports whether the linked upstream release defines a
// feature of that name.
func upstreamHas(name FeatureName) bool {
	for f := range gwfeatures.AllFeatures {
		if f.Name == name {
			return true
		}
	}
	return false
}

// releaseDependent are the features that are upstream's in one supported
// release and gatewitness's own in the other. gatewitness's data lists them as
// its own; registerGatewitness skips such an entry when the linked release
// defines the feature, and linkedUpstream drops it from a profile's
// upstream list when the linked release does not.
var releaseDependent = map[FeatureName]bool{
	SupportHTTPRouteRetryCodes:          true, // gatewitness's in v1.6, upstream's from v1.7
	SupportHTTPRouteRetryBackendTimeout: true, // upstream's in v1.6, gatewitness's from v1.7
}

// linkedUpstream returns names without the release-dependent features the
// linked release does not define: the upstream features of a gatewitness
// profile as the linked release has them.
func linkedUpstream(names ...FeatureName) []FeatureName {
	out := make([]FeatureName, 0, len(names))
	for _, n := range names {
		if releaseDependent[n] && !upstreamHas(n) {
			continue
		}
		out = append(out, n)
	}
	return out
}
