package controller

import (
	"slices"
	"strings"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// classState is the controller's verdict on one GatewayClass whose
// spec.controllerName is the controller's.
type classState struct {
	class       *gwv1.GatewayClass
	accepted    bool
	notAccepted reason
	// timeouts are the connection timeouts from spec.parametersRef, and
	// notes what the Accepted message adds about them (clamped values).
	timeouts ir.ConnectionTimeouts
	notes    []string
}

// evaluateClass decides a GatewayClass's Accepted condition
// (GatewayClassConditionStatusAccepted). The only parameters the reference
// gateway takes are connection timeouts in a ConfigMap (tuning.go): a
// parametersRef to anything else, to a missing ConfigMap, or to one with an
// unknown key or a malformed value is Accepted=False with reason
// InvalidParameters and a message naming the problem; every other class
// of ours is Accepted.
func (o *objects) evaluateClass(gc *gwv1.GatewayClass) *classState {
	s := &classState{class: gc, accepted: true}
	t, notes, err := o.classParameters(gc)
	if err != nil {
		s.accepted = false
		s.notAccepted = reason{string(gwv1.GatewayClassReasonInvalidParameters), err.Error()}
		return s
	}
	s.timeouts, s.notes = t, notes
	return s
}

// classStatus returns the desired status of a class: its Accepted condition
// and, when the controller was given any, its supported features sorted by
// name as GatewayClassStatus.SupportedFeatures requires.
func (s *classState) classStatus(features []gwv1.FeatureName) ([]condition, []gwv1.SupportedFeature) {
	cond := condition{Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: true,
		Reason: string(gwv1.GatewayClassReasonAccepted), Message: "GatewayClass is accepted"}
	if len(s.notes) > 0 {
		cond.Message += "; " + strings.Join(s.notes, "; ")
	}
	if !s.accepted {
		cond.Status = false
		cond.Reason, cond.Message = s.notAccepted.Reason, s.notAccepted.Message
	}
	var supported []gwv1.SupportedFeature
	if s.accepted {
		names := slices.Clone(features)
		slices.Sort(names)
		names = slices.Compact(names)
		for _, n := range names {
			supported = append(supported, gwv1.SupportedFeature{Name: n})
		}
	}
	return []condition{cond}, supported
}
