// Package probeproxytest starts reference probe proxies broken on purpose,
// the way real sidecars go wrong, for gatewitness's negative checks: the
// MeshProbe conformance tests must fail against a proxy that does not
// forward probes. It is for tests, as net/http/httptest is: the hook
// points' type lives in an internal package that only this one re-exports
// (Hooks).
package probeproxytest

import (
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/internal/breakage"
	"github.com/gatewitness/gatewitness/internal/hookset"
)

// Hooks are the hook points of the probe proxy, each a way it can go wrong
// as a real sidecar does (documented on each field). A named breakage sets
// the fields it needs; it is declared, with the tests it fails, in
// conformance/tests/breakages_test.go. The zero Hooks break nothing.
type Hooks = breakage.Set

// Listen is probeproxy.Listen broken at each hook point h sets; with the
// zero Hooks, it is probeproxy.Listen.
func Listen(addr string, opts probeproxy.Options, h Hooks) (*probeproxy.Server, error) {
	return probeproxy.ListenBroken(addr, opts, h)
}

// Merge returns a with every hook point of b added: the proxy broken both
// ways.
func Merge(a, b Hooks) Hooks { return hookset.Merge(a, b) }
