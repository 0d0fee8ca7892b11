package controller

import (
	"fmt"
	"strings"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayState is the controller's verdict on one Gateway of its classes.
type gatewayState struct {
	gw        *gwv1.Gateway
	listeners []*listenerState

	// accepted is the Accepted condition; acceptance is its reason and
	// message (Accepted, or ListenersNotValid even when True, as the spec
	// requires when some listeners are invalid).
	accepted   bool
	acceptance reason

	addresses []gwv1.GatewayStatusAddress

	// timeouts are the connection timeouts of the Gateway's class.
	timeouts ir.ConnectionTimeouts

	// programmed is the Programmed condition, decided after the data plane
	// took (or refused) the snapshot; notProgrammed is why it is False.
	programmed    bool
	notProgrammed reason
}

// evaluateGateway decides a Gateway's acceptance and its listeners'
// conditions (GatewayConditionAccepted):
//
//   - spec.addresses are UnsupportedAddress: the reference gateway publishes
//     the addresses its environment gives it (Options.Addresses);
//   - spec.infrastructure.parametersRef is InvalidParameters: no parameters
//     are supported;
//   - the Gateway is Accepted when at least one listener can take routes;
//     when any listener is not Accepted, is Conflicted or has unresolved
//     references, the reason is ListenersNotValid (with status True or False).
func (o *objects) evaluateGateway(gw *gwv1.Gateway, class *classState, addresses func(*gwv1.Gateway) []gwv1.GatewayStatusAddress) *gatewayState {
	s := &gatewayState{gw: gw}
	for i := range gw.Spec.Listeners {
		s.listeners = append(s.listeners, o.evaluateListener(gw, &gw.Spec.Listeners[i]))
	}
	markConflicts(s.listeners)

	switch {
	case !class.accepted:
		s.acceptance = reason{string(gwv1.GatewayReasonInvalidParameters),
			fmt.Sprintf("GatewayClass %s is not accepted: %s", class.class.Name, class.notAccepted.Message)}
		return s
	case len(gw.Spec.Addresses) > 0:
		s.acceptance = reason{string(gwv1.GatewayReasonUnsupportedAddress),
			"spec.addresses is not supported: the reference gateway assigns its own addresses; leave spec.addresses empty"}
		return s
	case gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil:
		s.acceptance = reason{string(gwv1.GatewayReasonInvalidParameters),
			"spec.infrastructure.parametersRef is not supported; leave it empty"}
		return s
	}

	var usable int
	var invalid []string
	for _, l := range s.listeners {
		if l.usable() {
			usable++
		}
		switch {
		case !l.accepted:
			invalid = append(invalid, fmt.Sprintf("%s (%s)", l.spec.Name, l.notAccepted.Reason))
		case l.conflicted.isSet():
			invalid = append(invalid, fmt.Sprintf("%s (%s)", l.spec.Name, l.conflicted.Reason))
		case l.unresolved.isSet():
			invalid = append(invalid, fmt.Sprintf("%s (%s)", l.spec.Name, l.unresolved.Reason))
		}
	}
	s.accepted = usable > 0
	if len(invalid) > 0 {
		s.acceptance = reason{string(gwv1.GatewayReasonListenersNotValid),
			"invalid listeners: " + strings.Join(invalid, ", ")}
	} else {
		s.acceptance = reason{string(gwv1.GatewayReasonAccepted), "Gateway is accepted"}
	}
	if s.accepted && addresses != nil {
		s.addresses = addresses(gw)
	}
	return s
}

// decideProgrammed sets the Programmed condition once the data plane has
// been given the snapshot: a Gateway is Programmed when it is Accepted, has
// an address, has at least one listener the data plane serves, and the data
// plane accepted the snapshot (applyErr is nil).
func (s *gatewayState) decideProgrammed(applyErr error) {
	programmable := 0
	for _, l := range s.listeners {
		if l.programmable() {
			programmable++
		}
	}
	switch {
	case !s.accepted:
		s.notProgrammed = reason{string(gwv1.GatewayReasonInvalid), "Gateway is not accepted: " + s.acceptance.Message}
	case programmable == 0:
		s.notProgrammed = reason{string(gwv1.GatewayReasonInvalid), "no listener can be programmed: " + s.acceptance.Message}
	case len(s.addresses) == 0:
		s.notProgrammed = reason{string(gwv1.GatewayReasonAddressNotAssigned), "no address has been assigned to the Gateway"}
	case applyErr != nil:
		s.notProgrammed = reason{string(gwv1.GatewayReasonInvalid), "the data plane could not program the snapshot: " + applyErr.Error()}
	default:
		s.programmed = true
	}
}

// serves reports whether the Gateway goes into the data plane snapshot.
func (s *gatewayState) serves() bool {
	if !s.accepted || len(s.addresses) == 0 {
		return false
	}
	for _, l := range s.listeners {
		if l.programmable() {
			return true
		}
	}
	return false
}
