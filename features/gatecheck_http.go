package features

import gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

// Finer features of the GATECHECK-HTTP-RESILIENCE profile: where GEP-1731
// or GEP-1742 leaves a choice, the portable test accepts every answer the
// text allows, and one of these features pins the stricter one.
const (
	// SupportHTTPRouteRetryLastStatus: when every attempt allowed failed
	// with a status, the client gets the backend's own last response.
	SupportHTTPRouteRetryLastStatus FeatureName = "HTTPRouteRetryLastStatus"
	// SupportHTTPRouteTimeout504: an expired timeouts.request or
	// timeouts.backendRequest is answered 504 Gateway Timeout.
	SupportHTTPRouteTimeout504 FeatureName = "HTTPRouteTimeout504"
)

// This file's init runs after gatecheck.go's (files initialise in name
// order), which registers the profile these features join.
func init() {
	Register(Feature{
		Name:        SupportHTTPRouteRetryLastStatus,
		Channel:     ChannelExperimental,
		Level:       LevelImplementationSpecific,
		GEP:         1731,
		DependsOn:   []FeatureName{SupportHTTPRouteRetry},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "After the last allowed attempt failed with a status, relays the backend's own last response rather than an error of the gateway's.",
	})
	Register(Feature{
		Name:        SupportHTTPRouteTimeout504,
		Channel:     ChannelStandard,
		Level:       LevelImplementationSpecific,
		GEP:         1742,
		DependsOn:   []FeatureName{gwfeatures.SupportHTTPRouteRequestTimeout, gwfeatures.SupportHTTPRouteBackendTimeout},
		Profiles:    []string{ProfileHTTPResilience},
		Description: "Answers an expired timeouts.request or timeouts.backendRequest with 504 Gateway Timeout, not 408 or another error.",
	})
}
