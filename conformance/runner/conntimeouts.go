package runner

import (
	"fmt"
	"strings"

	"github.com/gatewitness/gatewitness/conformance/tests"
)

// connectionTimeoutsUsage is the help of --connection-timeouts.
const connectionTimeoutsUsage = "the connection timeouts the connection timeout tests expect, over the defaults of gatewitness's ConfigMap, " +
	"as comma-separated key=value pairs: clientTimeout, clientFinTimeout, serverTimeout, serverFinTimeout, tunnelTimeout, " +
	"tlsInspectDelay (values in HAProxy's form, e.g. 3000 or 3s, or a Go duration) and gatewayClassName (the class of the tests' Gateway), " +
	"e.g. \"serverTimeout=30s,gatewayClassName=tuned\""

// parseConnectionTimeouts reads --connection-timeouts over base.
func parseConnectionTimeouts(base tests.ConnectionTimeouts, v string) (tests.ConnectionTimeouts, error) {
	form := "comma-separated key=value pairs, e.g. serverTimeout=30s,tunnelTimeout=1h"
	parts, err := parseList(v, form)
	if err != nil {
		return base, err
	}
	kv := make(map[string]string, len(parts))
	for _, p := range parts {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return base, fmt.Errorf("%q has no '='; want %s", p, form)
		}
		kv[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return tests.ParseConnectionTimeouts(base, kv)
}
