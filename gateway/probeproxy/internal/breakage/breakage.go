// Package breakage holds the hook points where the reference probe proxy
// can be broken on purpose, the way real sidecars go wrong, for
// gatewitness's negative checks. It is internal so that production code
// cannot name them: the only way in is package probeproxytest, which
// re-exports Set as probeproxytest.Hooks. The zero Set breaks nothing; a
// named breakage that uses a hook point is declared once, in
// conformance/tests/breakages_test.go.
package breakage

// Set is the hook points of one broken probe proxy. Every field is a bool.
type Set struct {
	// HTTPAlwaysUp answers every HTTP probe 200 without asking the app, as
	// a sidecar that answers probes itself does.
	HTTPAlwaysUp bool
	// TCPAlwaysUp answers every TCP probe 200 without connecting to the
	// app, as a sidecar that accepts every connection itself would.
	TCPAlwaysUp bool
	// GRPCAlwaysServing answers every gRPC probe 200 without asking the
	// app.
	GRPCAlwaysServing bool
}
