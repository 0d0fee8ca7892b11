package controller

import (
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// classState is the controller's verdict on one GatewayClass whose
// spec.controllerName is the controller's.
type classState struct {
	class       *gwv1.GatewayClass
	accepted    bool
	notAccepted reason
}

// evaluateClass decides a GatewayClass's Accepted condition
// (GatewayClassConditionStatusAccepted): the reference gateway takes no
// parameters, so a class with spec.parametersRef is Accepted=False with
// reason InvalidParameters; every other class of ours is Accepted.
func evaluateClass(gc *gwv1.GatewayClass) *classState {
	s := &classState{class: gc, accepted: true}
	if gc.Spec.ParametersRef != nil {
		s.accepted = false
		s.notAccepted = reason{string(gwv1.GatewayClassReasonInvalidParameters),
			"spec.parametersRef is not supported by this controller; leave it empty"}
	}
	return s
}

// classStatus returns the desired status of a class: its Accepted condition
// and, when the controller was given any, its supported features sorted by
// name as GatewayClassStatus.SupportedFeatures requires.
func (s *classState) classStatus(features []gwv1.FeatureName) ([]condition, []gwv1.SupportedFeature) {
	cond := condition{Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: true,
		Reason: string(gwv1.GatewayClassReasonAccepted), Message: "GatewayClass is accepted"}
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
