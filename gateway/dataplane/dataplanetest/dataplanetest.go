// Package dataplanetest builds reference data planes broken on purpose,
// the way real data planes go wrong, for gatewitness's negative checks: each
// conformance test must fail against the data plane it is meant to catch.
// It is for tests, as net/http/httptest is; production code has no way to
// break a data plane, since the switches live in an internal package that
// only this one reaches.
//
// A breakage that is "the controller's snapshot with a field dropped" (a
// retry policy's codes, a retry budget, a timeout) needs nothing here: it
// is a change to the snapshot the data plane's Apply is handed. What a
// snapshot cannot say (how the data plane's own code behaves) is a
// Breakage, passed to NewServer; a data plane that serves snapshots late is
// LateApply, a wrapper around Apply.
package dataplanetest

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/breakage"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Breakage names a way the reference data plane's own code goes wrong.
type Breakage string

// The breakages, each modelled on a real data plane.
const (
	// TransportResends lets the upstream transport resend a request by
	// itself, as a plain httputil.ReverseProxy over net/http's transport
	// does: an idempotent request whose reused keep-alive connection fails
	// before a response is sent again on another connection, whatever the
	// route's retry policy says.
	TransportResends Breakage = "transport-resends"
	// InactivityTimeouts makes timeouts.request, timeouts.backendRequest
	// and a GRPCRoute call's bound inactivity timers that every byte (or
	// message) of the response restarts, as HAProxy's "timeout server" is,
	// and (like HAProxy) leaves grpc-timeout as received.
	InactivityTimeouts Breakage = "inactivity-timeouts"
	// NoNonIdempotentRetries never retries a POST or a PATCH, as nginx's
	// proxy_next_upstream does by default.
	NoNonIdempotentRetries Breakage = "no-non-idempotent-retries"
	// CloseTunnelOnBackendFIN closes both sides of a WebSocket at once
	// when the backend half-closes, as HAProxy does in HTTP mode.
	CloseTunnelOnBackendFIN Breakage = "close-tunnel-on-backend-fin"
	// RetryBudgetRelaysBackendStatus answers a request whose retry the
	// retry budget refused with the backend's failed response, as Envoy
	// does when its retry budget overflows, instead of 503.
	RetryBudgetRelaysBackendStatus Breakage = "retry-budget-relays-backend-status"
	// GRPCIgnoreClientTimeout leaves the client's grpc-timeout out of a
	// GRPCRoute call's budget.
	GRPCIgnoreClientTimeout Breakage = "grpc-ignore-client-timeout"
	// GRPCLooserWins makes StrictEnforcement Allow take the longer of
	// maxStreamDuration and grpc-timeout instead of the shorter.
	GRPCLooserWins Breakage = "grpc-looser-wins"
	// GRPCUnavailableOnExpiry ends an expired call with UNAVAILABLE, the
	// code an HTTP 504 maps to, instead of DEADLINE_EXCEEDED.
	GRPCUnavailableOnExpiry Breakage = "grpc-unavailable-on-expiry"
	// GRPCNoTimeoutPropagation forwards grpc-timeout as received instead
	// of the call's remaining budget.
	GRPCNoTimeoutPropagation Breakage = "grpc-no-timeout-propagation"
)

// switches turns each Breakage on in a breakage.Set.
var switches = map[Breakage]func(*breakage.Set){
	TransportResends:               func(s *breakage.Set) { s.TransportResends = true },
	InactivityTimeouts:             func(s *breakage.Set) { s.InactivityTimeouts = true },
	NoNonIdempotentRetries:         func(s *breakage.Set) { s.NoNonIdempotentRetries = true },
	CloseTunnelOnBackendFIN:        func(s *breakage.Set) { s.CloseTunnelOnBackendFIN = true },
	RetryBudgetRelaysBackendStatus: func(s *breakage.Set) { s.RetryBudgetRelaysBackendStatus = true },
	GRPCIgnoreClientTimeout:        func(s *breakage.Set) { s.GRPC.IgnoreClientTimeout = true },
	GRPCLooserWins:                 func(s *breakage.Set) { s.GRPC.LooserWins = true },
	GRPCUnavailableOnExpiry:        func(s *breakage.Set) { s.GRPC.UnavailableOnExpiry = true },
	GRPCNoTimeoutPropagation:       func(s *breakage.Set) { s.GRPC.NoTimeoutPropagation = true },
}

// Breakages lists every Breakage.
func Breakages() []Breakage {
	return []Breakage{
		TransportResends, InactivityTimeouts, NoNonIdempotentRetries, CloseTunnelOnBackendFIN,
		RetryBudgetRelaysBackendStatus, GRPCIgnoreClientTimeout, GRPCLooserWins,
		GRPCUnavailableOnExpiry, GRPCNoTimeoutPropagation,
	}
}

// NewServer returns dataplane.New(opts) broken in each way of bs; with no
// breakages, it is dataplane.New(opts). It panics on a name that is not a
// Breakage, as httptest panics on what a test cannot go on from.
func NewServer(opts dataplane.Options, bs ...Breakage) *dataplane.Server {
	var set breakage.Set
	for _, b := range bs {
		on, ok := switches[b]
		if !ok {
			panic(fmt.Sprintf("dataplanetest: unknown breakage %q; known: %v", b, Breakages()))
		}
		on(&set)
	}
	return breakage.NewServer.(func(dataplane.Options, breakage.Set) *dataplane.Server)(opts, set)
}

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
