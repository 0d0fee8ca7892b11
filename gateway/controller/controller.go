// Package controller is the reference gateway's control plane. It watches
// the Gateway API objects (and the Services, EndpointSlices, Secrets and
// Namespaces they refer to) through a controller-runtime client.WithWatch,
// writes the status the Gateway API specification requires on the
// GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes and TLSRoutes it owns,
// and compiles
// the routing snapshot (ir.Config) the data plane serves.
//
// The controller keeps informer caches of the objects it reads, and every
// burst of changes triggers one recompute of everything from those caches:
// simpler than reconciling object by object, so that it reads as a
// specification, and linear in the number of objects. Updates that change
// only the status of the objects whose status it writes (its own writes
// among them) trigger nothing. The client may be an API server's or the
// in-memory store's.
package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/reconcile"
)

// Options configure a Controller.
type Options struct {
	// Client reads and watches the objects and writes their status. Its
	// scheme must know the core, discovery and Gateway API (v1, and v1beta1
	// for ReferenceGrant) types.
	Client client.WithWatch

	// ControllerName is the GatewayClass spec.controllerName this controller
	// owns, e.g. "gatewitness.dev/reference-gateway".
	ControllerName gwv1.GatewayController

	// Apply receives every new snapshot. An error means the data plane could
	// not program it: the affected Gateways and their listeners are then
	// Programmed=False. Nil discards snapshots (status only).
	Apply func(*ir.Config) error

	// Addresses returns the addresses to publish in a Gateway's status
	// (in-process: a loopback IP). A Gateway without addresses is not
	// Programmed (AddressNotAssigned). Nil publishes none.
	Addresses func(gw *gwv1.Gateway) []gwv1.GatewayStatusAddress

	// SupportedFeatures, when set, is published in the status of every
	// accepted GatewayClass of ours (GatewayClassStatus.SupportedFeatures),
	// from which the upstream suite can infer what to test.
	SupportedFeatures []gwv1.FeatureName

	// Logger receives errors and progress; the zero Logger discards.
	Logger logr.Logger
}

// Controller reconciles the objects of the GatewayClasses it owns.
// Create it with New and start it with Run.
type Controller struct {
	opts     Options
	trigger  reconcile.Trigger // a pending recompute absorbs further pokes
	lastPoke atomic.Int64      // when poke was last called, in Unix nanoseconds

	mu        sync.Mutex
	applied   *ir.Config // last snapshot Apply took without error
	appliedOK bool

	// Owned by the goroutine that recomputes (Run's, or a caller of sync
	// outside Run).
	informers *informers                     // nil outside Run: recomputes list
	written   map[objectRef]writtenStatus    // see remember
	writtenMu sync.Mutex                     // held by remember, which the status writers call
	grpcMemo  map[types.UID]decodedGRPCRoute // GRPCRoutes decoded, by uid
}

// MaxSupportedFeatures is the most features GatewayClassStatus.SupportedFeatures
// holds: the GatewayClass CRD's maxItems. An API server refuses a status
// with more, so New refuses Options that ask for more.
const MaxSupportedFeatures = 64

// New checks opts and returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("controller: Options.Client is nil; it must be a client.WithWatch")
	}
	if opts.ControllerName == "" {
		return nil, errors.New(`controller: Options.ControllerName is empty; it must be a domain-prefixed path such as "gatewitness.dev/reference-gateway"`)
	}
	if n := len(opts.SupportedFeatures); n > MaxSupportedFeatures {
		return nil, fmt.Errorf("controller: Options.SupportedFeatures has %d features; GatewayClass status.supportedFeatures holds at most %d (the CRD's maxItems), so the status write would be refused and the class never Accepted: publish at most %d", n, MaxSupportedFeatures, MaxSupportedFeatures)
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &Controller{opts: opts, trigger: reconcile.NewTrigger()}, nil
}

// Run watches the objects and recomputes after every burst of changes until
// ctx is done; it then waits for its watches to stop and returns nil. The
// first recompute waits until every kind has been listed once. Failed
// recomputes (a status write failed) are retried with a growing delay. Run
// must not be called more than once at a time.
func (c *Controller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	inf := c.startInformers(ctx, &wg)
	if !inf.waitSynced(ctx) {
		return nil
	}
	c.informers = inf
	defer func() { c.informers = nil }()

	reconcile.Run(ctx, c.trigger, reconcile.Options{
		Pass: func(ctx context.Context) (bool, error) { return false, c.sync(ctx) },
		Failed: func(err error, delay time.Duration) {
			c.opts.Logger.Error(err, "recompute failed; retrying", "delay", delay)
		},
		MinDelay: minRetry,
		MaxDelay: maxRetry,
		// A failed write is retried after its delay, not sooner because
		// more changes came in.
		HoldRetries: true,
		// Under a stream of changes, recompute at most about half the
		// time: each recompute takes in every change made meanwhile, and
		// the writers (a suite applying thousands of routes) keep a core.
		MaxPause: maxPause,
		// Once the writers have stopped, the recompute that takes in
		// their last changes runs at once instead of after the pause.
		Quiet: quietChanges,
	})
	return nil
}

// maxPause bounds the pause after a recompute (see Run); a pause ends
// early once no change has come for quietChanges. At 10,000 routes a
// recompute takes about a second, and without the early end the routes
// created last waited up to that second more for their status.
const (
	maxPause     = time.Second
	quietChanges = 10 * time.Millisecond
)

// poke schedules a recompute; pokes while one is pending coalesce.
func (c *Controller) poke() {
	c.lastPoke.Store(time.Now().UnixNano())
	c.trigger.Pull()
}

// othersQuiet reports whether no change has come for quietChanges: the
// other clients have stopped writing, for now.
func (c *Controller) othersQuiet() bool {
	return time.Since(time.Unix(0, c.lastPoke.Load())) >= quietChanges
}

// world is the outcome of one recompute before it is applied: the verdicts
// on every object of ours and the snapshot compiled from them.
type world struct {
	classes  []*classState
	gateways []*gatewayState
	routes   []*routeState
	policies []*policyState // XBackendTrafficPolicies (retrybudget.go)
	config   *ir.Config
}

// build computes everything from the listed objects without side effects.
func (c *Controller) build(o *objects) *world {
	w := &world{}
	classes := map[string]*classState{}
	for _, gc := range o.classes {
		if gc.Spec.ControllerName != c.opts.ControllerName {
			continue
		}
		s := o.evaluateClass(gc)
		classes[gc.Name] = s
		w.classes = append(w.classes, s)
	}

	byName := map[types.NamespacedName]*gatewayState{}
	for _, gw := range o.gateways {
		class := classes[string(gw.Spec.GatewayClassName)]
		if class == nil {
			continue
		}
		s := o.evaluateGateway(gw, class, c.opts.Addresses)
		s.timeouts = class.timeouts
		byName[client.ObjectKeyFromObject(gw)] = s
		w.gateways = append(w.gateways, s)
	}
	slices.SortFunc(w.gateways, func(a, b *gatewayState) int {
		return cmp.Or(cmp.Compare(a.gw.Namespace, b.gw.Namespace), cmp.Compare(a.gw.Name, b.gw.Name))
	})

	w.policies, o.retryBudgets = o.evaluateRetryPolicies()
	for _, r := range o.httpRoutes {
		s := newRouteState(r, "HTTPRoute", r.Spec.ParentRefs, r.Spec.Hostnames)
		s.httpRules, s.unresolved, s.unsupported = o.compileHTTPRoute(r)
		w.routes = append(w.routes, s)
	}
	for _, r := range o.grpcRoutes {
		s := newRouteState(r, "GRPCRoute", r.Spec.ParentRefs, r.Spec.Hostnames)
		s.grpcRules, s.unresolved, s.unsupported = o.compileGRPCRoute(r)
		w.routes = append(w.routes, s)
	}
	for _, r := range o.tlsRoutes {
		s := newRouteState(r, "TLSRoute", r.Spec.ParentRefs, r.Spec.Hostnames)
		s.tlsBackends, s.unresolved = o.compileTLSRoute(r)
		w.routes = append(w.routes, s)
	}
	// Attach in creation order so that listener route lists are stable and
	// ordered as the precedence rules break ties.
	slices.SortStableFunc(w.routes, func(a, b *routeState) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.key(), b.key()), cmp.Compare(a.kind, b.kind))
	})
	for _, r := range w.routes {
		o.attachRoute(r, byName)
	}
	resolveKindConflicts(w.gateways, w.routes)

	w.config = compileConfig(w.gateways)
	return w
}

func newRouteState(obj client.Object, kind gwv1.Kind, refs []gwv1.ParentReference, hostnames []gwv1.Hostname) *routeState {
	return &routeState{
		obj:        obj,
		kind:       kind,
		namespace:  obj.GetNamespace(),
		name:       obj.GetName(),
		generation: obj.GetGeneration(),
		created:    obj.GetCreationTimestamp().Time,
		parentRefs: refs,
		hostnames:  hostnames,
	}
}

// sync runs one recompute: read the objects (from the caches in Run, from
// fresh lists outside it), build, hand the snapshot to the data plane, then
// write every status that changed.
func (c *Controller) sync(ctx context.Context) error {
	var o *objects
	var err error
	if c.informers != nil {
		o, err = c.cachedObjects()
	} else {
		o, err = c.listObjects(ctx)
	}
	if err != nil {
		return err
	}
	w := c.build(o)
	applyErr := c.apply(w.config)
	if applyErr != nil {
		c.opts.Logger.Error(applyErr, "data plane refused the snapshot")
	}
	for _, gs := range w.gateways {
		gs.decideProgrammed(applyErr)
	}

	now := metav1.Now().Rfc3339Copy()
	var errs []error
	for _, s := range w.classes {
		errs = append(errs, c.writeClassStatus(ctx, s, now))
	}
	for _, s := range w.gateways {
		errs = append(errs, c.writeGatewayStatus(ctx, s, now))
	}
	errs = append(errs, c.writeRouteStatuses(ctx, w.routes, now)...)
	ancestors := policyAncestors(w.policies, w.gateways, w.config)
	for _, ps := range w.policies {
		errs = append(errs, c.writePolicyStatus(ctx, ps, ancestors[ps], now))
	}
	return errors.Join(errs...)
}

// statusWriters is how many goroutines write route statuses at once while
// no other client is writing.
const statusWriters = 4

// writeRouteStatuses writes the status of every route that changed. While
// other clients are writing (a change came less than quietChanges ago) it
// writes from one goroutine, as before, and leaves them the other cores;
// once they are quiet it adds goroutines, up to statusWriters, as a
// controller with several workers does: an API server serves the writes
// concurrently, and so does the in-memory store, which validates each
// outside its lock. After a burst of Creates (10,000 routes) most of the
// recompute that follows is these writes, and one goroutine left the
// other cores idle; during the burst, more goroutines slowed the Creates
// more than they sped the statuses. It returns one error per route (nil
// for most), in the order of routes.
func (c *Controller) writeRouteStatuses(ctx context.Context, routes []*routeState, now metav1.Time) []error {
	errs := make([]error, len(routes))
	var next atomic.Int64 // index of the next route to write
	take := func() (int, bool) {
		i := int(next.Add(1)) - 1
		return i, i < len(routes)
	}
	var helpers atomic.Int32 // goroutines writing beside this one
	help := func() {
		defer helpers.Add(-1)
		for c.othersQuiet() {
			i, ok := take()
			if !ok {
				return
			}
			errs[i] = c.writeRouteStatus(ctx, routes[i], now)
		}
	}
	var wg sync.WaitGroup
	for {
		if helpers.Load() < statusWriters-1 && c.othersQuiet() {
			helpers.Add(1)
			wg.Go(help)
		}
		i, ok := take()
		if !ok {
			break
		}
		errs[i] = c.writeRouteStatus(ctx, routes[i], now)
	}
	wg.Wait()
	return errs
}

// apply hands cfg to the data plane unless it equals the last snapshot the
// data plane took.
func (c *Controller) apply(cfg *ir.Config) error {
	if c.opts.Apply == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.appliedOK && reflect.DeepEqual(cfg, c.applied) {
		return nil
	}
	if err := c.opts.Apply(cfg); err != nil {
		c.appliedOK = false
		return fmt.Errorf("applying snapshot: %w", err)
	}
	c.applied, c.appliedOK = cfg, true
	return nil
}
