// Package runnertest runs the conformance suite against the in-process
// reference gateway broken on purpose, the way real data planes go wrong,
// to show that the tests fail against it (package negative builds its
// checks on it). It is for tests, as net/http/httptest is: runner.Options
// has no way to break the gateway, so a production run cannot be handed a
// broken one.
package runnertest

import (
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
	"github.com/gatewitness/gatewitness/internal/brokengateway"
)

// ReferenceGateway says how the in-process reference gateway is broken.
// The zero value leaves it healthy.
type ReferenceGateway struct {
	// MutateConfig changes every routing snapshot before the data plane
	// gets it, as a data plane that ignores a field behaves (for example:
	// Retry = nil turns retries off). It is called from the controller's
	// goroutine only; it may change the snapshot in place, but values it
	// shares with the controller's objects (pointers into the routes) must
	// be copied before they are changed.
	MutateConfig func(*ir.Config)
	// LateApply, when positive, hands each snapshot to the data plane this
	// long after the controller made it (dataplanetest.LateApply), as a
	// data plane fed asynchronously takes it: status is written before the
	// routes are served.
	LateApply time.Duration
	// DataPlane breaks the data plane's own code
	// (dataplanetest.NewServer).
	DataPlane []dataplanetest.Breakage
	// ProbeProxy breaks every pod's probe proxy
	// (probeproxytest.Listen).
	ProbeProxy []probeproxytest.Breakage
	// NoMesh runs the cluster without a mesh: the pod runner ignores the
	// probe proxy annotation, and the kubelet probes every Pod directly.
	NoMesh bool
}

// hooks are g as the embedded cluster takes them.
func (g ReferenceGateway) hooks() brokengateway.Hooks {
	var h brokengateway.Hooks
	mutate, late := g.MutateConfig, g.LateApply
	if mutate != nil || late > 0 {
		h.Apply = func(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error {
			if late > 0 {
				apply = dataplanetest.LateApply(apply, late, log)
			}
			if mutate == nil {
				return apply
			}
			return func(cfg *ir.Config) error {
				mutate(cfg)
				return apply(cfg)
			}
		}
	}
	if bs := g.DataPlane; len(bs) > 0 {
		h.NewDataPlane = func(o dataplane.Options) *dataplane.Server { return dataplanetest.NewServer(o, bs...) }
	}
	if bs := g.ProbeProxy; len(bs) > 0 {
		h.ListenProbeProxy = func(addr string, o probeproxy.Options) (*probeproxy.Server, error) {
			return probeproxytest.Listen(addr, o, bs...)
		}
	}
	h.NoMesh = g.NoMesh
	return h
}

// Run is runner.Run against the in-process reference gateway broken as g
// says. On a cluster (o.Kubeconfig set) g is ignored, as it cannot reach the
// gateway there. Run may be called once per test.
func Run(t *testing.T, o runner.Options, g ReferenceGateway) (*runner.Result, error) {
	brokengateway.Set(t, g.hooks())
	return runner.Run(t, o)
}
