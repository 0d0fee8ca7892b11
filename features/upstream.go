package features

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// upstreamSets are the feature sets the upstream features package defines.
// A feature's level is taken from the name of its set. UDPRouteFeatures has
// no level in its name; it is treated as extended, as upstream files its
// sibling TCPRoute under TCPRouteExtendedFeatures. Note that a profile may
// place a feature differently: GATEWAY-HTTP counts BackendTLSPolicy
// (a core feature of its own resource) as extended, and GATEWAY-TCP counts
// TCPRoute as core. LookupProfile reports the profile's view.
//
// base is the resource's core feature, which the extended features of the
// set depend on.
var upstreamSets = []struct {
	set   sets.Set[gwfeatures.Feature]
	level Level
	base  FeatureName
}{
	{gwfeatures.GatewayCoreFeatures, LevelCore, ""},
	{gwfeatures.GatewayExtendedFeatures, LevelExtended, gwfeatures.SupportGateway},
	{gwfeatures.ReferenceGrantCoreFeatures, LevelCore, ""},
	{gwfeatures.HTTPRouteCoreFeatures, LevelCore, ""},
	{gwfeatures.HTTPRouteExtendedFeatures, LevelExtended, gwfeatures.SupportHTTPRoute},
	{gwfeatures.TLSRouteCoreFeatures, LevelCore, ""},
	{gwfeatures.TLSRouteExtendedFeatures, LevelExtended, gwfeatures.SupportTLSRoute},
	{gwfeatures.TCPRouteExtendedFeatures, LevelExtended, ""},
	{gwfeatures.UDPRouteFeatures, LevelExtended, ""},
	{gwfeatures.MeshCoreFeatures, LevelCore, ""},
	{gwfeatures.MeshExtendedFeatures, LevelExtended, gwfeatures.SupportMesh},
	{gwfeatures.GRPCRouteCoreFeatures, LevelCore, ""},
	{gwfeatures.GRPCRouteExtendedFeatures, LevelExtended, gwfeatures.SupportGRPCRoute},
	{gwfeatures.BackendTLSPolicyCoreFeatures, LevelCore, ""},
	{gwfeatures.BackendTLSPolicyExtendedFeatures, LevelExtended, gwfeatures.SupportBackendTLSPolicy},
}

// upstreamDependsOn adds dependencies between extended features that the
// upstream tests state by listing both features (e.g. the multiple-mirrors
// test also requires HTTPRouteRequestMirror), and the retry-on-* features,
// which refine the release's retry feature (see releases.go).
var upstreamDependsOn = map[FeatureName][]FeatureName{
	gwfeatures.SupportHTTPRouteRequestMultipleMirrors:                            {gwfeatures.SupportHTTPRouteRequestMirror},
	SupportHTTPRouteRetryBackendTimeout:                                          {SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteBackendTimeout},
	gwfeatures.SupportHTTPRouteRetryConnectionError:                              {SupportHTTPRouteRetry},
	gwfeatures.SupportGatewayFrontendClientCertificateValidationInsecureFallback: {gwfeatures.SupportGatewayFrontendClientCertificateValidation},
	gwfeatures.SupportTLSRouteModeMixed:                                          {gwfeatures.SupportTLSRouteModeTerminate},
}

// upstreamGEPs maps upstream features to the GEP that defines them, as
// listed in the geps/ directory of gateway-api v1.6.3 (and v1.7.0's
// HTTPRouteRetryCodes). Features missing
// here predate the GEP process or have no single defining GEP.
var upstreamGEPs = map[FeatureName]int{
	gwfeatures.SupportReferenceGrant:                                             709,
	gwfeatures.SupportHTTPRoutePathRedirect:                                      726,
	gwfeatures.SupportHTTPRoutePathRewrite:                                       726,
	gwfeatures.SupportHTTPRouteHostRewrite:                                       726,
	gwfeatures.SupportHTTPRouteDestinationPortMatching:                           957,
	gwfeatures.SupportHTTPRouteNamedRouteRule:                                    995,
	gwfeatures.SupportGRPCRouteNamedRouteRule:                                    995,
	gwfeatures.SupportMeshHTTPRouteNamedRouteRule:                                995,
	gwfeatures.SupportGRPCRoute:                                                  1016,
	gwfeatures.SupportHTTPRouteResponseHeaderModification:                        1323,
	gwfeatures.SupportMesh:                                                       1324,
	gwfeatures.SupportListenerSet:                                                1713,
	upstreamHTTPRouteRetryV16:                                                    1731,
	SupportHTTPRouteRetryCodes:                                                   1731,
	SupportHTTPRouteRetryBackendTimeout:                                          1731,
	gwfeatures.SupportHTTPRouteRetryConnectionError:                              1731,
	gwfeatures.SupportHTTPRouteRequestTimeout:                                    1742,
	gwfeatures.SupportHTTPRouteBackendTimeout:                                    1742,
	gwfeatures.SupportHTTPRouteCORS:                                              1767,
	gwfeatures.SupportGatewayInfrastructure:                                      1867,
	gwfeatures.SupportBackendTLSPolicy:                                           1897,
	gwfeatures.SupportBackendTLSPolicySANValidation:                              1897,
	gwfeatures.SupportHTTPRouteBackendProtocolH2C:                                1911,
	gwfeatures.SupportHTTPRouteBackendProtocolWebSocket:                          1911,
	gwfeatures.SupportTLSRoute:                                                   2643,
	gwfeatures.SupportTLSRouteModeTerminate:                                      2643,
	gwfeatures.SupportTLSRouteModeMixed:                                          2643,
	gwfeatures.SupportTCPRoute:                                                   2644,
	gwfeatures.SupportUDPRoute:                                                   2645,
	gwfeatures.SupportGatewayBackendClientCertificate:                            3155,
	gwfeatures.SupportHTTPRouteRequestPercentageMirror:                           3171,
	gwfeatures.SupportGatewayHTTPSListenerDetectMisdirectedRequests:              3567,
	gwfeatures.SupportGatewayFrontendClientCertificateValidation:                 91,
	gwfeatures.SupportGatewayFrontendClientCertificateValidationInsecureFallback: 91,
}

// upstreamProfiles are the profiles the upstream suite defines. Its own map
// of them is private, so they are listed here.
var upstreamProfiles = []suite.ConformanceProfile{
	suite.GatewayHTTPConformanceProfile,
	suite.GatewayTLSConformanceProfile,
	suite.GatewayTCPConformanceProfile,
	suite.GatewayUDPConformanceProfile,
	suite.GatewayGRPCConformanceProfile,
	suite.MeshHTTPConformanceProfile,
	suite.MeshGRPCConformanceProfile,
}

// registerUpstream fills r with the upstream features and profiles.
//
// A feature in more than one set (v1.7's ClusterTrustBundle is in
// GatewayExtendedFeatures and BackendTLSPolicyExtendedFeatures: it refines
// whichever of the two an implementation claims) is registered once, with
// the first set's level and without a base feature.
func registerUpstream(r *registry) error {
	inSets := map[FeatureName]int{}
	for _, s := range upstreamSets {
		for uf := range s.set {
			inSets[uf.Name]++
		}
	}
	for _, s := range upstreamSets {
		list := s.set.UnsortedList()
		slices.SortFunc(list, func(a, b gwfeatures.Feature) int { return cmp.Compare(a.Name, b.Name) })
		for _, uf := range list {
			if _, done := r.lookup(uf.Name); done && inSets[uf.Name] > 1 {
				continue
			}
			f := Feature{
				Name:     uf.Name,
				Channel:  Channel(uf.Channel),
				Level:    s.level,
				GEP:      upstreamGEPs[uf.Name],
				Upstream: true,
			}
			if s.base != "" && s.base != uf.Name && inSets[uf.Name] == 1 {
				f.DependsOn = append(f.DependsOn, s.base)
			}
			f.DependsOn = append(f.DependsOn, upstreamDependsOn[uf.Name]...)
			if err := r.register(f); err != nil {
				return err
			}
		}
	}
	for _, p := range upstreamProfiles {
		if _, err := r.addProfile(string(p.Name), sets.List(p.CoreFeatures), sets.List(p.ExtendedFeatures), true); err != nil {
			return err
		}
	}
	return nil
}
