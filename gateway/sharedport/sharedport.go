// Package sharedport makes the reference gateway serve as implementations
// with one entry point per port do: every Gateway gets the same address,
// and the listeners of all Gateways on one port are served by one socket.
// Merge rewrites a routing snapshot so: one Gateway per listener port,
// whose listeners are those of every Gateway on that port, the listeners
// of one hostname (and protocol) merged into one with the routes of all.
//
// What one socket cannot tell apart is lost, as it is on such an
// implementation: a port's connection timeouts are those of the first
// Gateway on it (the snapshot's order), a listener whose protocol differs
// from the port's first (HTTP, HTTPS or TLS passthrough) is not served,
// and routes of different Gateways for one hostname and path compete by
// the Gateway API's precedence. Tests that need distinct Gateways check
// that premise and say so (conformance/tests).
package sharedport

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Namespace is the namespace of the merged Gateways in a merged snapshot.
// It is not a valid Kubernetes namespace name, so it names no real
// Gateway.
const Namespace = "shared:"

// Name is the name of the merged Gateway serving port.
func Name(port int32) string { return fmt.Sprintf("port-%d", port) }

// Merge returns cfg with its Gateways merged by listener port (see the
// package doc), in the order of the ports' first listeners, and an error
// naming each listener left out. cfg is not modified; the result shares
// cfg's routes and certificates.
func Merge(cfg *ir.Config) (*ir.Config, error) {
	out := &ir.Config{}
	if cfg == nil {
		return out, nil
	}
	byPort := map[int32]int{} // index in out.Gateways
	var errs []error
	for gi := range cfg.Gateways {
		gw := &cfg.Gateways[gi]
		for li := range gw.Listeners {
			l := &gw.Listeners[li]
			i, ok := byPort[l.Port]
			if !ok {
				i = len(out.Gateways)
				byPort[l.Port] = i
				out.Gateways = append(out.Gateways, ir.Gateway{Namespace: Namespace, Name: Name(l.Port), Timeouts: gw.Timeouts})
			}
			merged := &out.Gateways[i]
			if len(merged.Listeners) > 0 && merged.Listeners[0].Protocol != l.Protocol {
				errs = append(errs, fmt.Errorf("gateway %s/%s listener %q (port %d): protocol %s, but the shared port serves %s (listener %q): one socket serves one of HTTP, HTTPS or TLS",
					gw.Namespace, gw.Name, l.Name, l.Port, l.Protocol, merged.Listeners[0].Protocol, merged.Listeners[0].Name))
				continue
			}
			j := slices.IndexFunc(merged.Listeners, func(m ir.Listener) bool { return m.Hostname == l.Hostname })
			if j < 0 {
				cp := *l
				cp.HTTPRoutes = slices.Clone(l.HTTPRoutes)
				cp.GRPCRoutes = slices.Clone(l.GRPCRoutes)
				cp.TLSRoutes = slices.Clone(l.TLSRoutes)
				merged.Listeners = append(merged.Listeners, cp)
				continue
			}
			m := &merged.Listeners[j]
			m.HTTPRoutes = appendNew(m.HTTPRoutes, l.HTTPRoutes, func(r ir.HTTPRoute) ir.RouteMeta { return r.RouteMeta })
			m.GRPCRoutes = appendNew(m.GRPCRoutes, l.GRPCRoutes, func(r ir.GRPCRoute) ir.RouteMeta { return r.RouteMeta })
			m.TLSRoutes = appendNew(m.TLSRoutes, l.TLSRoutes, func(r ir.TLSRoute) ir.RouteMeta { return r.RouteMeta })
		}
	}
	return out, errors.Join(errs...)
}

// Apply returns an Apply hook that merges each snapshot before handing it
// to apply, and returns both's errors.
func Apply(apply func(*ir.Config) error) func(*ir.Config) error {
	return func(cfg *ir.Config) error {
		merged, err := Merge(cfg)
		return errors.Join(err, apply(merged))
	}
}

// appendNew appends to dst the routes of src that dst does not hold (a
// route attached to several Gateways' listeners of one hostname is served
// once).
func appendNew[R any](dst, src []R, meta func(R) ir.RouteMeta) []R {
	for _, r := range src {
		m := meta(r)
		if !slices.ContainsFunc(dst, func(d R) bool { o := meta(d); return o.Namespace == m.Namespace && o.Name == m.Name }) {
			dst = append(dst, r)
		}
	}
	return dst
}
