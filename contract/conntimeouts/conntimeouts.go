// Package conntimeouts is the contract of the connection-level timeouts
// that a GatewayClass's parametersRef sets for every Gateway of the class:
// the keys of the ConfigMap it names (those of OpenShift's ingress
// spec.tuningOptions) and the form of their values.
//
// The reference gateway's controller reads the ConfigMap with it, and the
// connection timeout tests read the values they expect with it, so both
// accept exactly the same text and neither imports the other.
package conntimeouts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The ConfigMap keys of the connection timeouts.
const (
	KeyClientTimeout    = "clientTimeout"    // client side idle (no byte from the client)
	KeyClientFinTimeout = "clientFinTimeout" // client side, after the client half-closed
	KeyServerTimeout    = "serverTimeout"    // server side idle (no byte from the backend)
	KeyServerFinTimeout = "serverFinTimeout" // server side, after the backend half-closed
	KeyTunnelTimeout    = "tunnelTimeout"    // an upgraded (WebSocket) or CONNECT tunnel, idle
	KeyTLSInspectDelay  = "tlsInspectDelay"  // how long to wait for a TLS ClientHello to route it
)

// Keys lists the keys in a fixed order (the order above), for error
// messages that name the accepted keys.
var Keys = []string{
	KeyClientTimeout, KeyClientFinTimeout, KeyServerTimeout,
	KeyServerFinTimeout, KeyTunnelTimeout, KeyTLSInspectDelay,
}

// MaxTimeout is the largest timeout a value may set, HAProxy's limit of
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
// MaxTimeout is clamped to it and clamped is true; 0 means disabled. An
// error states the accepted form.
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
	case err != nil && strings.Contains(err.Error(), "invalid duration") && goDuration.MatchString(s):
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
