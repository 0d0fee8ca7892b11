package controller

// A GatewayClass's parametersRef: a ConfigMap holding the connection-level
// timeouts of every Gateway of the class (ir.ConnectionTimeouts),
// under the keys and in the value forms of contract/conntimeouts.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/contract/conntimeouts"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// tuningKey is one ConfigMap key and the field it sets.
type tuningKey struct {
	key   string
	field func(*ir.ConnectionTimeouts) *time.Duration
}

// tuningKeys lists the keys in the order of their fields.
var tuningKeys = []tuningKey{
	{conntimeouts.KeyClientTimeout, func(t *ir.ConnectionTimeouts) *time.Duration { return &t.Client }},
	{conntimeouts.KeyClientFinTimeout, func(t *ir.ConnectionTimeouts) *time.Duration { return &t.ClientFin }},
	{conntimeouts.KeyServerTimeout, func(t *ir.ConnectionTimeouts) *time.Duration { return &t.Server }},
	{conntimeouts.KeyServerFinTimeout, func(t *ir.ConnectionTimeouts) *time.Duration { return &t.ServerFin }},
	{conntimeouts.KeyTunnelTimeout, func(t *ir.ConnectionTimeouts) *time.Duration { return &t.Tunnel }},
	{conntimeouts.KeyTLSInspectDelay, func(t *ir.ConnectionTimeouts) *time.Duration { return &t.TLSInspectDelay }},
}

// classParameters reads a GatewayClass's parametersRef. It returns the
// timeouts, notes on clamped values for the Accepted message, and an error
// naming what is wrong (the class is then not accepted).
func (o *objects) classParameters(gc *gwv1.GatewayClass) (t ir.ConnectionTimeouts, notes []string, err error) {
	ref := gc.Spec.ParametersRef
	if ref == nil {
		return t, nil, nil
	}
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		return t, nil, fmt.Errorf("spec.parametersRef: group %q kind %q is not supported; accepted: a core ConfigMap (group \"\", kind ConfigMap) with a namespace", ref.Group, ref.Kind)
	}
	if ref.Namespace == nil || *ref.Namespace == "" {
		return t, nil, errors.New("spec.parametersRef.namespace is empty; accepted: the namespace of the ConfigMap")
	}
	key := types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}
	cm := o.configMaps[key]
	if cm == nil {
		return t, nil, fmt.Errorf("spec.parametersRef: ConfigMap %s not found", key)
	}
	return parseTuning(cm)
}

// parseTuning reads the timeouts from a ConfigMap's data. Every key must be
// one of the six; absent keys leave their timeout disabled.
func parseTuning(cm *corev1.ConfigMap) (t ir.ConnectionTimeouts, notes []string, err error) {
	where := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	accepted := make([]string, len(tuningKeys))
	for i, tk := range tuningKeys {
		accepted[i] = tk.key
	}
	for _, k := range keys {
		i := slices.IndexFunc(tuningKeys, func(tk tuningKey) bool { return tk.key == k })
		if i < 0 {
			return ir.ConnectionTimeouts{}, nil, fmt.Errorf("%s: key %q is not a parameter; accepted keys: %s", where, k, strings.Join(accepted, ", "))
		}
		d, clamped, err := conntimeouts.ParseTimeout(strings.TrimSpace(cm.Data[k]))
		if err != nil {
			return ir.ConnectionTimeouts{}, nil, fmt.Errorf("%s: key %s: %w", where, k, err)
		}
		if clamped {
			notes = append(notes, fmt.Sprintf("%s: %s %q is above the maximum and is clamped to %dms", where, k, cm.Data[k], conntimeouts.MaxTimeout.Milliseconds()))
		}
		*tuningKeys[i].field(&t) = d
	}
	if len(cm.BinaryData) > 0 {
		return ir.ConnectionTimeouts{}, nil, fmt.Errorf("%s: binaryData is not read; put the parameters under data (accepted keys: %s)", where, strings.Join(accepted, ", "))
	}
	return t, notes, nil
}
