// Package runnertest runs the conformance suite against the in-process
// reference gateway broken on purpose, the way real data planes go wrong,
// to show that the tests fail against it (package negative builds its
// checks on it). It is for tests, as net/http/httptest is: it builds the
// runner's in-process target (runner.InProcess) from the test-only
// constructors of the data plane (dataplanetest) and the probe proxy
// (probeproxytest), whose hook points production code cannot name.
//
// A breakage is followed by its types: a ReferenceGateway's fields become
// a cluster.Gateway (InProcess), which cluster.StartWith builds the data
// plane, the controller's Apply and the pods' probe proxies from.
package runnertest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gatewitness/gatewitness/cluster"
	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
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
	// LaggingReplica, when positive, runs a second replica of the data
	// plane behind every Gateway address (cluster.Gateway.Replica), each
	// new connection going to one of the two at random, and hands it each
	// snapshot this long after the first replica took it, as a replica
	// that reloads late and reads the newest then does
	// (dataplanetest.LaggingReplica); status follows the first.
	LaggingReplica time.Duration
	// StatusFilter, when set, is called with every object whose status
	// the controller is about to write, and may change that status (drop
	// a condition: a controller that never writes it).
	StatusFilter func(client.Object)
	// DataPlane breaks the data plane's own code at its hook points
	// (dataplanetest.NewServer).
	DataPlane dataplanetest.Hooks
	// ProbeProxy breaks every pod's probe proxy at its hook points
	// (probeproxytest.Listen).
	ProbeProxy probeproxytest.Hooks
	// NoMesh runs the cluster without a mesh: the pod runner ignores the
	// probe proxy annotation, and the kubelet probes every Pod directly.
	NoMesh bool
}

// InProcess returns the runner's in-process target broken as g says.
func (g ReferenceGateway) InProcess() runner.InProcess {
	var gw cluster.Gateway
	mutate, late := g.MutateConfig, g.LateApply
	if mutate != nil || late > 0 {
		gw.WrapApply = func(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error {
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
	if lag := g.LaggingReplica; lag > 0 {
		gw.Replica = func(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error {
			return dataplanetest.LaggingReplica(apply, lag, log)
		}
	}
	if f := g.StatusFilter; f != nil {
		gw.WrapControllerClient = func(c client.WithWatch) client.WithWatch { return filteredStatus(c, f) }
	}
	if h := g.DataPlane; !reflect.ValueOf(h).IsZero() {
		gw.NewDataPlane = func(o dataplane.Options) *dataplane.Server { return dataplanetest.NewServer(o, h) }
	}
	if h := g.ProbeProxy; !reflect.ValueOf(h).IsZero() {
		gw.ListenProbeProxy = func(addr string, o probeproxy.Options) (*probeproxy.Server, error) {
			return probeproxytest.Listen(addr, o, h)
		}
	}
	gw.NoMesh = g.NoMesh
	return runner.InProcess{Gateway: gw}
}

// filteredStatus returns c with every status write (Status().Update and
// Patch) passing the object through filter first.
func filteredStatus(c client.WithWatch, filter func(client.Object)) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if sub == "status" {
				filter(obj)
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if sub == "status" {
				filter(obj)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

// Run is runner.Run against the in-process reference gateway broken as g
// says (runner.RunInProcess with g.InProcess()). On a cluster
// (o.Kubeconfig set) g is ignored, as it cannot reach the gateway there.
func Run(t *testing.T, o runner.Options, g ReferenceGateway) (*runner.Result, error) {
	t.Helper()
	return runner.RunInProcess(t, o, g.InProcess())
}
