package controller

// A GatewayClass's parametersRef: a ConfigMap holding the connection-level
// timeouts of every Gateway of the class (dataplane.ConnectionTimeouts),
// under the key names of OpenShift's ingress spec.tuningOptions.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatecheck/gatecheck/gateway/dataplane"
)

// The ConfigMap keys of the connection timeouts.
const (
	KeyClientTimeout    = "clientTimeout"
	KeyClientFinTimeout = "clientFinTimeout"
	KeyServerTimeout    = "serverTimeout"
	KeyServerFinTimeout = "serverFinTimeout"
	KeyTunnelTimeout    = "tunnelTimeout"
	KeyTLSInspectDelay  = "tlsInspectDelay"
)

// tuningKey is one ConfigMap key and the field it sets.
type tuningKey struct {
	key   string
	field func(*dataplane.ConnectionTimeouts) *time.Duration
}

// tuningKeys lists the keys in the order of their fields.
var tuningKeys = []tuningKey{
	{KeyClientTimeout, func(t *dataplane.ConnectionTimeouts) *time.Duration { return &t.Client }},
	{KeyClientFinTimeout, func(t *dataplane.ConnectionTimeouts) *time.Duration { return &t.ClientFin }},
	{KeyServerTimeout, func(t *dataplane.ConnectionTimeouts) *time.Duration { return &t.Server }},
	{KeyServerFinTimeout, func(t *dataplane.ConnectionTimeouts) *time.Duration { return &t.ServerFin }},
	{KeyTunnelTimeout, func(t *dataplane.ConnectionTimeouts) *time.Duration { return &t.Tunnel }},
	{KeyTLSInspectDelay, func(t *dataplane.ConnectionTimeouts) *time.Duration { return &t.TLSInspectDelay }},
}

// MaxTimeout is the largest timeout a parameter may set, HAProxy's limit of
// 2147483647ms; larger values are clamped to it.
const MaxTimeout = 2147483647 * time.Millisecond

// maxTimeoutLen bounds the length of a timeout value.
const maxTimeoutLen = 64

// TimeoutForm describes the accepted forms of a timeout value, for error
// messages.
const TimeoutForm = `HAProxy's form [0-9]+(us|ms|s|m|h|d)? (no unit means milliseconds), ` +
	`or a Go duration such as 1m30s; 0 disables the timeout`

// haproxyTimeout is HAProxy's timeout syntax.
var haproxyTimeout = regexp.MustCompile(`^([0-9]+)(us|ms|s|m|h|d)?$`)

// haproxyUnits are the units of haproxyTimeout.
var haproxyUnits = map[string]time.Duration{
	"us": time.Microsecond, "": time.Millisecond, "ms": time.Millisecond,
	"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
}

// ParseTimeout parses a connection timeout value: HAProxy's form
// [0-9]+(us|ms|s|m|h|d)?, where no unit means milliseconds, or a Go
// duration (time.ParseDuration) that is not negative. A value above
// MaxTimeout is clamped to it and clamped is true; 0 means disabled.
func ParseTimeout(s string) (d time.Duration, clamped bool, err error) {
	if len(s) > maxTimeoutLen {
		return 0, false, fmt.Errorf("value of %d bytes is too long (at most %d); accepted: %s", len(s), maxTimeoutLen, TimeoutForm)
	}
	if m := haproxyTimeout.FindStringSubmatch(s); m != nil {
		unit := haproxyUnits[m[2]]
		n, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil || n > uint64(MaxTimeout/unit) {
			// Too many digits for any unit: far above the limit.
			return MaxTimeout, true, nil
		}
		return time.Duration(n) * unit, false, nil
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil && strings.Contains(err.Error(), "invalid duration") && goDurationShape(s):
		// Well formed but too large for a time.Duration.
		return MaxTimeout, true, nil
	case err != nil:
		return 0, false, fmt.Errorf("%q is not a timeout; accepted: %s", s, TimeoutForm)
	case v < 0:
		return 0, false, fmt.Errorf("%q is negative; accepted: %s", s, TimeoutForm)
	case v > MaxTimeout:
		return MaxTimeout, true, nil
	}
	return v, false, nil
}

// goDuration is the shape of a positive Go duration, used to tell an
// overflow from a syntax error.
var goDuration = regexp.MustCompile(`^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$`)

func goDurationShape(s string) bool { return goDuration.MatchString(s) }

// classParameters reads a GatewayClass's parametersRef. It returns the
// timeouts, notes on clamped values for the Accepted message, and an error
// naming what is wrong (the class is then not accepted).
func (o *objects) classParameters(gc *gwv1.GatewayClass) (t dataplane.ConnectionTimeouts, notes []string, err error) {
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
func parseTuning(cm *corev1.ConfigMap) (t dataplane.ConnectionTimeouts, notes []string, err error) {
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
			return dataplane.ConnectionTimeouts{}, nil, fmt.Errorf("%s: key %q is not a parameter; accepted keys: %s", where, k, strings.Join(accepted, ", "))
		}
		d, clamped, err := ParseTimeout(strings.TrimSpace(cm.Data[k]))
		if err != nil {
			return dataplane.ConnectionTimeouts{}, nil, fmt.Errorf("%s: key %s: %w", where, k, err)
		}
		if clamped {
			notes = append(notes, fmt.Sprintf("%s: %s %q is above the maximum and is clamped to %dms", where, k, cm.Data[k], MaxTimeout.Milliseconds()))
		}
		*tuningKeys[i].field(&t) = d
	}
	if len(cm.BinaryData) > 0 {
		return dataplane.ConnectionTimeouts{}, nil, fmt.Errorf("%s: binaryData is not read; put the parameters under data (accepted keys: %s)", where, strings.Join(accepted, ", "))
	}
	return t, notes, nil
}
