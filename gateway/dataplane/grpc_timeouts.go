package dataplane

// GRPCRoute timeouts (GEP-3139): the budget of a call, from the rule's
// maxStreamDuration and the client's grpc-timeout (whose syntax is
// internal/grpctimeout). docs/semantics/grpcroute-timeouts.md gives the decisions
// and the GEP sentences behind them; grpc_proxy.go enforces the budget.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/grpctimeout"
)

// grpcLimits is a GRPCRoute rule's compiled GEP-3139 timeouts.
type grpcLimits struct {
	maxStream  time.Duration // zero: the rule sets no limit
	strictDeny bool
}

// compileGRPCTimeouts checks a rule's timeouts; an error names the field and
// the accepted form, and the caller makes the rule answer INTERNAL.
func (a *action) compileGRPCTimeouts(r *ir.GRPCRule) error {
	if r.MaxStreamDuration < 0 {
		return fmt.Errorf("timeouts.maxStreamDuration: %v is negative; accepted: 0 (no limit) or at least 1ms", r.MaxStreamDuration)
	}
	if r.MaxStreamDuration > 0 && r.MaxStreamDuration < time.Millisecond {
		return fmt.Errorf("timeouts.maxStreamDuration: %v is below 1ms; accepted: 0 (no limit) or at least 1ms", r.MaxStreamDuration)
	}
	a.grpcLimits = grpcLimits{maxStream: r.MaxStreamDuration, strictDeny: r.StrictDeny}
	return nil
}

// budgetSource says which value bounds a call.
type budgetSource = part.BudgetSource

const (
	budgetNone   = part.BudgetNone   // no limit at all
	budgetRoute  = part.BudgetRoute  // the rule's maxStreamDuration
	budgetClient = part.BudgetClient // the client's grpc-timeout
)

// callBudget returns how long a call may last from the moment the gateway
// got its request headers, and where the value comes from:
//
//   - the rule sets no limit (maxStreamDuration omitted or 0s): the client's
//     grpc-timeout, if any;
//   - Deny: the client's grpc-timeout when present, else the rule's limit;
//   - Allow (the default): the shorter of the two when both are present,
//     else whichever is.
func callBudget(lim grpcLimits, client time.Duration, hasClient bool) (time.Duration, budgetSource) {
	switch {
	case hasClient && (lim.maxStream == 0 || lim.strictDeny):
		return client, budgetClient
	case lim.maxStream == 0:
		return 0, budgetNone
	case !hasClient:
		return lim.maxStream, budgetRoute
	}
	if client < lim.maxStream {
		return client, budgetClient
	}
	return lim.maxStream, budgetRoute
}

// grpcTimeoutHeader is the canonical key of the gRPC deadline header.
const grpcTimeoutHeader = "Grpc-Timeout"

// clientTimeout reads the request's grpc-timeout header. ok is false when
// there is none; an error names the header and the accepted form.
func clientTimeout(h http.Header) (d time.Duration, ok bool, err error) {
	vs := h[grpcTimeoutHeader]
	switch len(vs) {
	case 0:
		return 0, false, nil
	case 1:
	default:
		return 0, false, fmt.Errorf("grpc-timeout: %d values, want one; %s", len(vs), grpctimeout.Form)
	}
	d, err = grpctimeout.Parse(vs[0])
	if err != nil {
		return 0, false, err
	}
	return d, true, nil
}
