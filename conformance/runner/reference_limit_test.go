package runner

import (
	"testing"

	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/features"
)

// TestReferenceFeaturesFitGatewayClassStatus: the in-process GatewayClass
// publishes every feature the reference gateway claims in
// status.supportedFeatures, which the GatewayClass CRD bounds (maxItems).
// One feature more and the status write is refused: the class is never
// Accepted, and a run waits for it in silence.
func TestReferenceFeaturesFitGatewayClassStatus(t *testing.T) {
	list, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list {
		if crd.Spec.Names.Kind != "GatewayClass" {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			sf, ok := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["supportedFeatures"]
			if !ok || sf.MaxItems == nil {
				continue
			}
			if *sf.MaxItems != features.MaxGatewayClassFeatures {
				t.Errorf("GatewayClass %s status.supportedFeatures holds at most %d; features.MaxGatewayClassFeatures is %d: make them agree",
					v.Name, *sf.MaxItems, features.MaxGatewayClassFeatures)
			}
			published, left := features.ForGatewayClassStatus(ReferenceFeatures())
			if int64(len(published)) > *sf.MaxItems {
				t.Errorf("the in-process class would publish %d features; GatewayClass %s status.supportedFeatures holds at most %d: "+
					"the class would never be Accepted", len(published), v.Name, *sf.MaxItems)
			}
			for _, f := range left {
				if !features.IsGatewitness(features.FeatureName(f)) {
					t.Errorf("upstream feature %s is left out of the class's status: upstream's suite reads its claims from there", f)
				}
			}
			t.Logf("GatewayClass %s: %d published of at most %d; %d of gatewitness's claimed by the run only: %v",
				v.Name, len(published), *sf.MaxItems, len(left), left)
			return
		}
	}
	t.Fatal("no served GatewayClass version with a bound on status.supportedFeatures in the CRDs")
}
