// Compiling a rule's action: its backends, timeouts and filters, checked
// once when an ir.Config is applied, so that serving a request only reads them.

package dataplane

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// action is what a matched rule does: filters and weighted backends.
type action struct {
	filters     filterSet
	backends    []*backend
	totalWeight int64
	grpc        bool // a GRPCRoute rule: backends speak h2c, errors are gRPC statuses
	invalid     string
	// requestTimeout bounds the whole exchange and backendTimeout each
	// attempt (GEP-1742); zero means no limit.
	requestTimeout, backendTimeout time.Duration
	// retry is the rule's retry policy (GEP-1731); nil makes one attempt.
	retry *retryPolicy
	// grpcLimits are a GRPCRoute rule's timeouts (GEP-3139).
	grpcLimits grpcLimits
	// serverTimeout is the Gateway's ConnectionTimeouts.Server: the
	// longest silence of a backend during an attempt; zero means none.
	serverTimeout time.Duration
}

// backend is a resolved backendRef with its round-robin cursor.
type backend struct {
	name      string
	weight    int64
	invalid   bool
	endpoints []string
	h2c       bool
	filters   filterSet
	budget    *ir.RetryBudget // nil: no retry budget
	next      atomic.Uint64
	// inflight counts the requests in flight to the backend, shared by
	// every rule and snapshot that names it (limits.go); set by Apply.
	inflight *atomic.Int64
}

// pickEndpoint returns the next endpoint in round-robin order, or "" when
// there is none.
func (b *backend) pickEndpoint() string {
	if len(b.endpoints) == 0 {
		return ""
	}
	n := b.next.Add(1) - 1
	return b.endpoints[n%uint64(len(b.endpoints))]
}

// fail marks the action invalid for err, so that its rule answers with an
// error (answers says which, for the report: "500", "INTERNAL"), and
// returns err as the route's report names it.
func (a *action) fail(where, answers string, err error) error {
	a.invalid = err.Error()
	return fmt.Errorf("%s: %w (the rule answers %s)", where, err, answers)
}

// compileHTTPBackends resolves an HTTPRoute rule's backends. It never
// fails the rule: an invalid backend answers 500 for its share of the
// traffic.
func (a *action) compileHTTPBackends(bs []ir.HTTPBackend, where string) error {
	var errs []error
	for i := range bs {
		b := &bs[i]
		errs = append(errs, a.addBackend(&b.Backend, where, "500", func(fs *filterSet) error { return fs.compileHTTP(b.Filters) }))
	}
	return errors.Join(errs...)
}

// compileGRPCBackends resolves a GRPCRoute rule's backends, as
// compileHTTPBackends does; an invalid backend answers INTERNAL.
func (a *action) compileGRPCBackends(bs []ir.GRPCBackend, where string) error {
	var errs []error
	for i := range bs {
		b := &bs[i]
		errs = append(errs, a.addBackend(&b.Backend, where, "INTERNAL", func(fs *filterSet) error { return fs.compileGRPC(b.Filters) }))
	}
	return errors.Join(errs...)
}

// compileTLSBackends resolves a TLSRoute's backends, which have no filters.
func (a *action) compileTLSBackends(bs []ir.Backend, where string) error {
	var errs []error
	for i := range bs {
		errs = append(errs, a.addBackend(&bs[i], where, "a closed connection", nil))
	}
	return errors.Join(errs...)
}

// addBackend adds one backend to the action, its filters compiled by
// compileFilters (nil: it has none). A backend with a negative weight is
// left out; one whose filters do not compile is kept, invalid, and answers
// with an error (answers names it, for the report) for its share of the
// traffic.
func (a *action) addBackend(b *ir.Backend, where, answers string, compileFilters func(*filterSet) error) error {
	if b.Weight < 0 {
		return fmt.Errorf("%s backend %s: weight %d is negative; accepted weights are 0-1000000 (the backend gets no traffic)", where, b.Name, b.Weight)
	}
	cb := &backend{
		name:      b.Name,
		weight:    int64(b.Weight),
		invalid:   b.Invalid,
		endpoints: b.Endpoints,
		h2c:       a.grpc || b.AppProtocol == appProtocolH2C,
		budget:    b.RetryBudget,
	}
	var err error
	if compileFilters != nil {
		if ferr := compileFilters(&cb.filters); ferr != nil {
			cb.invalid = true
			err = fmt.Errorf("%s backend %s: %w (the backend answers %s)", where, b.Name, ferr, answers)
		}
	}
	a.backends = append(a.backends, cb)
	a.totalWeight += cb.weight
	return err
}

func (a *action) compileTimeouts(t *gwv1.HTTPRouteTimeouts) error {
	if t == nil {
		return nil
	}
	var err error
	if a.requestTimeout, err = ir.ParseDuration("timeouts.request", t.Request); err != nil {
		return err
	}
	a.backendTimeout, err = ir.ParseDuration("timeouts.backendRequest", t.BackendRequest)
	return err
}

// appProtocolH2C is the Service appProtocol that selects cleartext HTTP/2.
const appProtocolH2C = "kubernetes.io/h2c"
