package controller

// XBackendTrafficPolicy retryConstraint (GEP-3388): retry budgets per
// backend Service. docs/semantics/retry-budgets.md explains each choice.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

// The defaults of retryConstraint, as the CRD applies them; applied here
// too so a store without defaulting behaves like an API server.
const (
	defaultBudgetPercent  = 20
	defaultBudgetInterval = 10 * time.Second
	defaultMinRetries     = 10
	defaultMinInterval    = time.Second
)

// policyState is the verdict on one XBackendTrafficPolicy.
type policyState struct {
	policy   *gwxv1a1.XBackendTrafficPolicy
	accepted reason // Reason Accepted, or why not
	targets  []types.NamespacedName
}

// evaluateRetryPolicies decides every policy's Accepted condition and
// returns the retry budget of each Service a policy with a retryConstraint
// targets. Two policies targeting one Service conflict: the older (then
// the first by namespace/name) wins, the other is Conflicted. A policy
// with a target that is not a core Service is Invalid; one whose Services
// do not exist is TargetNotFound.
func (o *objects) evaluateRetryPolicies() ([]*policyState, map[types.NamespacedName]*ir.RetryBudget) {
	pols := make([]*policyState, len(o.policies))
	for i, p := range o.policies {
		pols[i] = &policyState{policy: p}
	}
	slices.SortFunc(pols, func(a, b *policyState) int {
		return cmp.Or(a.policy.CreationTimestamp.Compare(b.policy.CreationTimestamp.Time),
			cmp.Compare(a.policy.Namespace, b.policy.Namespace), cmp.Compare(a.policy.Name, b.policy.Name))
	})
	budgets := map[types.NamespacedName]*ir.RetryBudget{}
	owner := map[types.NamespacedName]string{}
	for _, ps := range pols {
		p := ps.policy
		budget, err := compileRetryConstraint(p.Spec.RetryConstraint)
		if err != nil {
			ps.accepted = reason{string(gwv1.PolicyReasonInvalid), err.Error()}
			continue
		}
		var missing []string
		for i, ref := range p.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" {
				ps.accepted = reason{string(gwv1.PolicyReasonInvalid), fmt.Sprintf(
					"spec.targetRefs[%d]: group %q kind %q is not supported; accepted: a core Service (group \"\", kind Service)", i, ref.Group, ref.Kind)}
				break
			}
			nn := types.NamespacedName{Namespace: p.Namespace, Name: string(ref.Name)}
			if o.services[nn] == nil {
				missing = append(missing, nn.String())
				continue
			}
			ps.targets = append(ps.targets, nn)
		}
		switch {
		case ps.accepted.isSet():
			ps.targets = nil
			continue
		case len(ps.targets) == 0:
			ps.accepted = reason{string(gwv1.PolicyReasonTargetNotFound), fmt.Sprintf("no targeted Service exists: %s", strings.Join(missing, ", "))}
			continue
		}
		for _, nn := range ps.targets {
			if other, taken := owner[nn]; taken {
				ps.accepted = reason{string(gwv1.PolicyReasonConflicted), fmt.Sprintf(
					"Service %s is already the target of the older XBackendTrafficPolicy %s", nn, other)}
				break
			}
		}
		if ps.accepted.isSet() {
			continue
		}
		ps.accepted = reason{string(gwv1.PolicyReasonAccepted), "the policy applies to " + joinNames(ps.targets)}
		for _, nn := range ps.targets {
			owner[nn] = p.Namespace + "/" + p.Name
			if budget != nil {
				b := *budget
				b.Key = nn.String()
				budgets[nn] = &b
			}
		}
	}
	return pols, budgets
}

func joinNames(nns []types.NamespacedName) string {
	var s []string
	for _, nn := range nns {
		s = append(s, "Service "+nn.String())
	}
	return strings.Join(s, ", ")
}

// compileRetryConstraint applies retryConstraint's defaults and checks its
// values (the CRD checks them too, but not every store runs its
// validation). nil means no budget.
func compileRetryConstraint(rc *gwxv1a1.RetryConstraint) (*ir.RetryBudget, error) {
	if rc == nil {
		return nil, nil
	}
	b := &ir.RetryBudget{Percent: defaultBudgetPercent, Interval: defaultBudgetInterval,
		MinRetries: defaultMinRetries, MinInterval: defaultMinInterval}
	if rc.Budget != nil {
		if rc.Budget.Percent != nil {
			b.Percent = *rc.Budget.Percent
			if b.Percent < 0 || b.Percent > 100 {
				return nil, fmt.Errorf("spec.retryConstraint.budget.percent: %d is out of range; accepted: 0 to 100", b.Percent)
			}
		}
		if rc.Budget.Interval != nil {
			d, err := ir.ParseDuration("spec.retryConstraint.budget.interval", rc.Budget.Interval)
			if err != nil {
				return nil, err
			}
			if d < time.Second || d > time.Hour {
				return nil, fmt.Errorf("spec.retryConstraint.budget.interval: %s is out of range; accepted: 1s to 1h", *rc.Budget.Interval)
			}
			b.Interval = d
		}
	}
	if rc.MinRetryRate != nil {
		if rc.MinRetryRate.Count != nil {
			b.MinRetries = *rc.MinRetryRate.Count
			if b.MinRetries < 1 || b.MinRetries > 1000000 {
				return nil, fmt.Errorf("spec.retryConstraint.minRetryRate.count: %d is out of range; accepted: 1 to 1000000", b.MinRetries)
			}
		}
		if rc.MinRetryRate.Interval != nil {
			d, err := ir.ParseDuration("spec.retryConstraint.minRetryRate.interval", rc.MinRetryRate.Interval)
			if err != nil {
				return nil, err
			}
			if d <= 0 || d > time.Hour {
				return nil, fmt.Errorf("spec.retryConstraint.minRetryRate.interval: %s is out of range; accepted: more than 0s, at most 1h", *rc.MinRetryRate.Interval)
			}
			b.MinInterval = d
		}
	}
	return b, nil
}

// policyAncestors returns, for every policy, the Gateways of ours whose
// routes send traffic to one of its targets (by the backend names of the
// snapshot, valid or not), as GEP-713 asks for a policy on a backend; a
// policy that reaches no Gateway gets the Gateways of ours in its own
// namespace, so that its verdict is visible.
func policyAncestors(pols []*policyState, gateways []*gatewayState, cfg *ir.Config) map[*policyState][]types.NamespacedName {
	routed := map[types.NamespacedName]map[types.NamespacedName]bool{} // Service -> Gateways
	for gi := range cfg.Gateways {
		gw := &cfg.Gateways[gi]
		g := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		gw.EachRequestBackend(func(b *ir.Backend) {
			svc, _, _ := strings.Cut(b.Name, ":")
			ns, name, ok := strings.Cut(svc, "/")
			if !ok {
				return
			}
			nn := types.NamespacedName{Namespace: ns, Name: name}
			if routed[nn] == nil {
				routed[nn] = map[types.NamespacedName]bool{}
			}
			routed[nn][g] = true
		})
	}
	out := map[*policyState][]types.NamespacedName{}
	for _, ps := range pols {
		set := map[types.NamespacedName]bool{}
		for _, ref := range ps.policy.Spec.TargetRefs {
			for g := range routed[types.NamespacedName{Namespace: ps.policy.Namespace, Name: string(ref.Name)}] {
				set[g] = true
			}
		}
		if len(set) == 0 {
			for _, gs := range gateways {
				if gs.gw.Namespace == ps.policy.Namespace {
					set[client.ObjectKeyFromObject(gs.gw)] = true
				}
			}
		}
		var gws []types.NamespacedName
		for g := range set {
			gws = append(gws, g)
		}
		slices.SortFunc(gws, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
		out[ps] = gws
	}
	return out
}

// writePolicyStatus writes a policy's ancestors: ours replaced, other
// controllers' kept.
func (c *Controller) writePolicyStatus(ctx context.Context, ps *policyState, ancestors []types.NamespacedName, now metav1.Time) error {
	p := ps.policy.DeepCopy()
	var out []gwv1.PolicyAncestorStatus
	ours := map[types.NamespacedName][]metav1.Condition{}
	for _, a := range p.Status.Ancestors {
		if a.ControllerName != c.opts.ControllerName {
			out = append(out, a)
			continue
		}
		ns := deref(a.AncestorRef.Namespace, gwv1.Namespace(p.Namespace))
		ours[types.NamespacedName{Namespace: string(ns), Name: string(a.AncestorRef.Name)}] = a.Conditions
	}
	accepted := condition{Type: string(gwv1.PolicyConditionAccepted), Status: ps.accepted.Reason == string(gwv1.PolicyReasonAccepted),
		Reason: ps.accepted.Reason, Message: ps.accepted.Message}
	for _, g := range ancestors {
		group, kind, ns := gwv1.Group(gwv1.GroupName), gwv1.Kind("Gateway"), gwv1.Namespace(g.Namespace)
		out = append(out, gwv1.PolicyAncestorStatus{
			AncestorRef:    gwv1.ParentReference{Group: &group, Kind: &kind, Namespace: &ns, Name: gwv1.ObjectName(g.Name)},
			ControllerName: c.opts.ControllerName,
			Conditions:     stampConditions(ours[g], []condition{accepted}, p.Generation, now, false),
		})
	}
	if len(out) > 16 {
		out = out[:16] // the API's maximum
	}
	if equality.Semantic.DeepEqual(out, p.Status.Ancestors) {
		return nil
	}
	p.Status.Ancestors = out
	if err := c.opts.Client.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("updating status of XBackendTrafficPolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	c.remember(kindTrafficPolicy, ps.policy.ResourceVersion, p)
	return nil
}
