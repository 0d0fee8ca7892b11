package breakage

// Calls broken: each type wraps the data plane's own part.Calls and
// changes how a gRPC call's budget is chosen, told or ended
// (Set.GRPC; Set.InactivityTimeouts stops the telling too).

import (
	"net/http"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// grpcTimeoutHeader is the canonical key of the gRPC deadline header.
const grpcTimeoutHeader = "Grpc-Timeout"

// grpcUnavailable is the grpc-status UNAVAILABLE, which an HTTP 504 maps to.
const grpcUnavailable = 14

// ignoreClient leaves the client's grpc-timeout out of the call's budget
// (GRPCTimeouts.IgnoreClientTimeout).
type ignoreClient struct{ part.Calls }

func (c ignoreClient) Budget(route time.Duration, deny bool, client time.Duration, _ bool) (time.Duration, part.BudgetSource) {
	return c.Calls.Budget(route, deny, client, false)
}

// looserWins makes StrictEnforcement Allow pick the longer of the route's
// limit and the client's grpc-timeout (GRPCTimeouts.LooserWins).
type looserWins struct{ part.Calls }

func (c looserWins) Budget(route time.Duration, deny bool, client time.Duration, hasClient bool) (time.Duration, part.BudgetSource) {
	if !hasClient || route == 0 || deny {
		return c.Calls.Budget(route, deny, client, hasClient)
	}
	if client >= route {
		return client, part.BudgetClient
	}
	return route, part.BudgetRoute
}

// unavailableOnExpiry ends an expired call with UNAVAILABLE
// (GRPCTimeouts.UnavailableOnExpiry).
type unavailableOnExpiry struct{ part.Calls }

func (unavailableOnExpiry) ExpiryCode() int { return grpcUnavailable }

// noPropagation forwards the client's grpc-timeout as received, or none,
// instead of the remaining budget (GRPCTimeouts.NoTimeoutPropagation).
type noPropagation struct{ part.Calls }

func (noPropagation) Tell(out, received http.Header, _ time.Duration, _ bool) bool {
	delete(out, grpcTimeoutHeader)
	if vs := received[grpcTimeoutHeader]; len(vs) > 0 {
		out[grpcTimeoutHeader] = vs
	}
	return true
}
