// Package breakage holds the switches that break the reference probe proxy
// on purpose, the way real sidecars go wrong, for gatewitness's negative
// checks. It is internal so that production code cannot reach them: the
// only way in is package probeproxytest. The zero Set breaks nothing.
package breakage

// Set is the switches of one broken probe proxy.
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

// Listen is probeproxy.Listen with the switches of a Set on: a
// func(addr string, opts probeproxy.Options, s Set) (*probeproxy.Server,
// error), which package probeproxy sets in its init. It cannot be typed
// here, since package probeproxy imports this one.
var Listen any
