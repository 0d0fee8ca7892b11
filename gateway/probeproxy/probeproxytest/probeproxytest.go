// Package probeproxytest starts reference probe proxies broken on purpose,
// the way real sidecars go wrong, for gatewitness's negative checks: the
// MeshProbe conformance tests must fail against a proxy that does not
// forward probes. It is for tests, as net/http/httptest is; production
// code has no way to break a probe proxy.
package probeproxytest

import (
	"fmt"

	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/internal/breakage"
)

// Breakage names a way the probe proxy goes wrong.
type Breakage string

// The breakages.
const (
	// HTTPAlwaysUp answers every HTTP probe 200 without asking the app, as
	// a sidecar that answers probes itself does.
	HTTPAlwaysUp Breakage = "http-always-up"
	// TCPAlwaysUp answers every TCP probe 200 without connecting to the
	// app, as a sidecar that captures inbound traffic and accepts every
	// connection itself does.
	TCPAlwaysUp Breakage = "tcp-always-up"
	// GRPCAlwaysServing answers every gRPC probe SERVING without asking
	// the app.
	GRPCAlwaysServing Breakage = "grpc-always-serving"
)

// switches turns each Breakage on in a breakage.Set.
var switches = map[Breakage]func(*breakage.Set){
	HTTPAlwaysUp:      func(s *breakage.Set) { s.HTTPAlwaysUp = true },
	TCPAlwaysUp:       func(s *breakage.Set) { s.TCPAlwaysUp = true },
	GRPCAlwaysServing: func(s *breakage.Set) { s.GRPCAlwaysServing = true },
}

// Breakages lists every Breakage.
func Breakages() []Breakage { return []Breakage{HTTPAlwaysUp, TCPAlwaysUp, GRPCAlwaysServing} }

// Listen is probeproxy.Listen broken in each way of bs; with no breakages,
// it is probeproxy.Listen. A name that is not a Breakage is an error.
func Listen(addr string, opts probeproxy.Options, bs ...Breakage) (*probeproxy.Server, error) {
	var set breakage.Set
	for _, b := range bs {
		on, ok := switches[b]
		if !ok {
			return nil, fmt.Errorf("probeproxytest: unknown breakage %q; known: %v", b, Breakages())
		}
		on(&set)
	}
	return breakage.Listen.(func(string, probeproxy.Options, breakage.Set) (*probeproxy.Server, error))(addr, opts, set)
}
