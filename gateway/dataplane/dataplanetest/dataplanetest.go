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
	var (
		mu            sync.Mutex
		seq, appliedN uint64
	)
	return func(cfg *ir.Config) error {
		mu.Lock()
		seq++
		mine := seq
		mu.Unlock()
		time.AfterFunc(d, func() {
			mu.Lock()
			defer mu.Unlock()
			if mine <= appliedN {
				return
			}
			appliedN = mine
			if err := apply(cfg); err != nil {
				log.Error(err, "late snapshot (dataplanetest.LateApply)")
			}
		})
		return nil
	}
}

// LaggingReplica returns apply as a second replica that reloads lag after
// every change and, as a proxy reloading reads its configuration then,
// takes the newest snapshot at that moment: the function returned gives
// nil at once and, lag later, hands apply the newest snapshot handed over
// by then, unless apply already has it. So the replica serves at any time
// a snapshot at least as new as the one of lag before, and changes that
// come within lag of each other reach it as one reload. It never serves
// a snapshot the controller replaced within lag: a controller makes one
// change in a burst of snapshots (a new Gateway, then the endpoints its
// informer had not yet delivered, some 100 ms later on a loaded machine),
// and a replica that applied each in turn would bind a new Gateway's port
// and answer 503 (no ready endpoints) for a state the controller never
// meant to publish, long after the other replica's answers showed the
// route served.
func LaggingReplica(apply func(*ir.Config) error, lag time.Duration, log logr.Logger) func(*ir.Config) error {
	var (
		mu              sync.Mutex
		newest          *ir.Config
		seq, appliedSeq uint64
	)
	return func(cfg *ir.Config) error {
		mu.Lock()
		seq++
		newest = cfg
		mu.Unlock()
		time.AfterFunc(lag, func() {
			mu.Lock()
			defer mu.Unlock()
			if appliedSeq == seq {
				return // a reload before this one took the newest
			}
			appliedSeq = seq
			if err := apply(newest); err != nil {
				log.Error(err, "late snapshot (dataplanetest.LaggingReplica)")
			}
		})
		return nil
	}
}
