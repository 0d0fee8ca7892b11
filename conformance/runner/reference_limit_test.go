package runner

import (
	"testing"

	"github.com/gatewitness/gatewitness/crds"
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
			if n := len(ReferenceFeatures()); int64(n) > *sf.MaxItems {
				t.Errorf("the reference gateway claims %d features; GatewayClass %s status.supportedFeatures holds at most %d: "+
					"the in-process class would never be Accepted", n, v.Name, *sf.MaxItems)
			} else {
				t.Logf("GatewayClass %s: %d of at most %d supported features", v.Name, n, *sf.MaxItems)
			}
			return
		}
	}
	t.Fatal("no served GatewayClass version with a bound on status.supportedFeatures in the CRDs")
}
