// Package dataplanetest builds reference data planes broken on purpose,
// the way real data planes go wrong, for gatewitness's negative checks: each
// conformance test must fail against the data plane it is meant to catch.
// It is for tests, as net/http/httptest is: the hook points' type lives in
// an internal package that only this one re-exports (Hooks), so production
// code that does not import a test package cannot break a data plane.
//
// A breakage that is "the controller's snapshot with a field dropped" (a
// retry policy's codes, a retry budget, a timeout) needs nothing here: it
// is a change to the snapshot the data plane's Apply is handed. What a
// snapshot cannot say (how the data plane's own code behaves) is set at
// its hook points, Hooks, passed to NewServer, which builds the data plane
// with the parts they name replaced or wrapped (internal/breakage.Build);
// a data plane that serves snapshots late is LateApply, a wrapper around
// Apply.
package dataplanetest

import (
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/breakage"
	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/hookset"
)

// Hooks are the hook points of the data plane's own code, each a way it
// can go wrong as a real data plane does (documented on each field). A
// named breakage sets the fields it needs; it is declared, with the tests
// it fails, in conformance/tests/breakages_test.go. The zero Hooks break
// nothing.
type Hooks = breakage.Set

// GRPCTimeouts are the hook points of the GRPCRoute timeout behaviour
// (Hooks.GRPC).
type GRPCTimeouts = breakage.GRPCTimeouts

// Relay are the hook points of how responses and request streams are
// relayed (Hooks.Relay).
type Relay = breakage.Relay

// NewServer returns dataplane.New(opts) broken at each hook point h sets:
// the parts they name are replaced or wrapped when the Server is built,
// and its request path is the production one. With the zero Hooks, it is
// dataplane.New(opts).
func NewServer(opts dataplane.Options, h Hooks) *dataplane.Server {
	return dataplane.NewBroken(opts, func(own part.Parts) part.Parts { return breakage.Build(h, own) })
}

// Merge returns a with every hook point of b added (a bool on in either is
// on; a func b sets replaces a's): the data plane broken both ways.
func Merge(a, b Hooks) Hooks { return hookset.Merge(a, b) }

// LateApply returns apply as a data plane fed asynchronously (xDS, a
// configuration reload) takes snapshots: the function returned gives nil at
// once and hands the snapshot to apply d later, unless a later snapshot
// was handed over by then; snapshots go over in the order they came. A
// controller that calls it writes Accepted and Programmed before the
// routes are served. Errors of the late apply go to log.
func LateApply(apply func(*ir.Config) error, d time.Duration, log logr.Logger) func(*ir.Config) error {
	return lateApply(apply, d, 0, 0, log)
}

// ReplicaDebounce is how close together a controller's snapshots come for
// a lagging replica (LaggingReplica) to take them as one change.
const ReplicaDebounce = 100 * time.Millisecond

// maxBurst bounds a burst LaggingReplica takes as one change: a snapshot
// made this long after the first of its burst is applied even if the
// next came within ReplicaDebounce.
const maxBurst = time.Second

// LaggingReplica returns apply as a second replica that reloads lag after
// every change: as LateApply, except that a snapshot followed within
// ReplicaDebounce by the next is not applied on its own. A controller
// makes one change in a burst of snapshots (a new Gateway, then the
// endpoints its informers had not yet delivered), and what pushes it to a
// proxy debounces the burst into one reload or one xDS push (Istio's
// debounce is 100 ms); a replica that applied each snapshot of the burst
// would serve, for milliseconds, a state the controller never meant to
// publish. A burst longer than maxBurst still has a snapshot applied at
// least every maxBurst.
func LaggingReplica(apply func(*ir.Config) error, lag time.Duration, log logr.Logger) func(*ir.Config) error {
	return lateApply(apply, lag, ReplicaDebounce, maxBurst, log)
}

// lateSnapshot is one snapshot handed to lateApply's function: when it
// came, when the first of its burst came (within debounce of each other),
// and the one that came next (nil: none yet).
type lateSnapshot struct {
	seq       uint64
	at, burst time.Time
	next      *lateSnapshot // guarded by lateApply's mutex
}

// lateApply hands each snapshot to apply d after it came, in order; with
// debounce positive, not one followed within debounce by the next, unless
// it came longest after the first of its burst.
func lateApply(apply func(*ir.Config) error, d, debounce, longest time.Duration, log logr.Logger) func(*ir.Config) error {
	var (
		mu      sync.Mutex
		last    *lateSnapshot // the last handed over
		applied *lateSnapshot // the last applied
	)
	return func(cfg *ir.Config) error {
		mu.Lock()
		mine := &lateSnapshot{at: time.Now()}
		mine.burst = mine.at
		if last != nil {
			mine.seq = last.seq + 1
			last.next = mine
			if mine.at.Sub(last.at) < debounce {
				mine.burst = last.burst
			}
		}
		last = mine
		mu.Unlock()
		time.AfterFunc(d, func() {
			mu.Lock()
			defer mu.Unlock()
			if applied != nil && mine.seq <= applied.seq {
				return
			}
			if n := mine.next; debounce > 0 && n != nil && n.at.Sub(mine.at) < debounce && mine.at.Sub(mine.burst) < longest {
				return // the next, due within debounce, is applied instead
			}
			applied = mine
			if err := apply(cfg); err != nil {
				log.Error(err, "late snapshot (dataplanetest.LateApply)")
			}
		})
		return nil
	}
}
