package features

import (
	"fmt"
	"strings"

	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// Release is a supported Gateway API release, by major.minor ("v1.6"): a
// feature's channel is declared for each (Feature.Channels).
type Release string

const (
	// ReleaseV16 is Gateway API v1.6 (v1.6.3 is go.mod's).
	ReleaseV16 Release = "v1.6"
	// ReleaseV17 is Gateway API v1.7 (v1.7.0; make test-gwapi-v1.7).
	ReleaseV17 Release = "v1.7"
)

// Releases lists the supported Gateway API releases, oldest first.
var Releases = []Release{ReleaseV16, ReleaseV17}

// LinkedRelease returns the supported release of the linked
// sigs.k8s.io/gateway-api (its consts.BundleVersion), or an error naming
// the supported ones.
func LinkedRelease() (Release, error) { return releaseOf(consts.BundleVersion) }

func releaseOf(bundleVersion string) (Release, error) {
	for _, r := range Releases {
		if bundleVersion == string(r) || strings.HasPrefix(bundleVersion, string(r)+".") {
			return r, nil
		}
	}
	return "", fmt.Errorf("features: the linked sigs.k8s.io/gateway-api is %s; gatewitness's features declare their channels for %v only (Feature.Channels)",
		bundleVersion, Releases)
}

// The channel declarations of gatewitness's data (Feature.Channels). They
// are shared: nothing may modify them.
var (
	// standardInEveryRelease: the feature's tests use only fields of
	// every supported release's standard CRDs.
	standardInEveryRelease = map[Release]Channel{ReleaseV16: ChannelStandard, ReleaseV17: ChannelStandard}
	// experimentalInEveryRelease: a test of the feature needs a field (or
	// kind) no supported release's standard CRDs have.
	experimentalInEveryRelease = map[Release]Channel{ReleaseV16: ChannelExperimental, ReleaseV17: ChannelExperimental}
	// standardFromV17: the fields the feature's tests need are
	// experimental in v1.6 and standard from v1.7 (HTTPRoute's retry).
	standardFromV17 = map[Release]Channel{ReleaseV16: ChannelExperimental, ReleaseV17: ChannelStandard}
)

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
