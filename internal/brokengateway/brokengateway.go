// Package brokengateway carries a reference gateway broken on purpose from
// a test to the embedded cluster that builds it, past runner.Run and
// cluster.Start, whose Options production callers see and which
// therefore hold no breakage. Tests break the gateway with
// conformance/runner/runnertest, which sets Hooks for its test from the
// named breakages of gateway/dataplane/dataplanetest and
// gateway/probeproxy/probeproxytest; the cluster and its pod runner only
// read them. Being internal, the hooks are out of reach of every program
// outside this module.
//
// The hooks travel as httptrace's do: in a context, for cluster.Start and
// the pod runner's Run; and, for runner.Run, which takes no context,
// registered for the running test.
package brokengateway

import (
	"context"
	"sync"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
)

// Hooks build the in-process reference gateway broken. Nil fields leave
// their part healthy; the zero Hooks break nothing.
type Hooks struct {
	// Apply, when set, stands between the controller and the data plane:
	// it is given the data plane's Apply (and the data plane's logger) and
	// returns what the controller calls instead, which may change each
	// snapshot (a field the data plane ignores) or hand it over late.
	Apply func(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error
	// NewDataPlane, when set, builds the data plane in place of
	// dataplane.New.
	NewDataPlane func(dataplane.Options) *dataplane.Server
	// ListenProbeProxy, when set, starts each pod's probe proxy in place of
	// probeproxy.Listen.
	ListenProbeProxy func(addr string, opts probeproxy.Options) (*probeproxy.Server, error)
	// NoMesh makes the pod runner ignore the probe proxy annotation, as a
	// cluster with no mesh would: every Pod keeps its probes and the
	// kubelet probes the app directly.
	NoMesh bool
}

type contextKey struct{}

// NewContext returns ctx carrying h.
func NewContext(ctx context.Context, h Hooks) context.Context {
	return context.WithValue(ctx, contextKey{}, h)
}

// FromContext returns the Hooks ctx carries; without any, the zero Hooks.
func FromContext(ctx context.Context) Hooks {
	h, _ := ctx.Value(contextKey{}).(Hooks)
	return h
}

// Test is the part of a *testing.T that Set and For use; it is named here
// so that the cluster, which imports this package, does not link package
// testing.
type Test interface {
	Name() string
	Fatalf(format string, args ...any)
	Cleanup(func())
}

var (
	mu     sync.Mutex
	byTest = map[Test]Hooks{}
)

// Set registers h for t until t ends: For(t) returns it.
func Set(t Test, h Hooks) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := byTest[t]; ok {
		t.Fatalf("brokengateway: %s already has a broken reference gateway", t.Name())
	}
	byTest[t] = h
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		delete(byTest, t)
	})
}

// For returns the Hooks registered for t; without any, the zero Hooks.
func For(t Test) Hooks {
	mu.Lock()
	defer mu.Unlock()
	return byTest[t]
}
