package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

func trafficPolicy(name string, created time.Time, rc *gwxv1a1.RetryConstraint, targets ...gwxv1a1.LocalPolicyTargetReference) *gwxv1a1.XBackendTrafficPolicy {
	return &gwxv1a1.XBackendTrafficPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec:       gwxv1a1.BackendTrafficPolicySpec{TargetRefs: targets, RetryConstraint: rc},
	}
}

func serviceTarget(name string) gwxv1a1.LocalPolicyTargetReference {
	return gwxv1a1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: gwv1.ObjectName(name)}
}

// TestRetryBudgetPolicies: an accepted policy puts its budget, with the
// API's defaults, on every backend of its Service; bad input is refused
// with a condition naming the field or the reason, and disturbs nothing
// else.
func TestRetryBudgetPolicies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	percent := 5
	badInterval := gwv1.Duration("2h")
	route := httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")})
	cl, rec := setup(t,
		gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, "")),
		route,
		service(ns, "other", corev1.ServicePort{Port: 80}),
		trafficPolicy("defaults", t0, &gwxv1a1.RetryConstraint{}, serviceTarget("svc")),
		trafficPolicy("younger", t0.Add(time.Second), &gwxv1a1.RetryConstraint{Budget: &gwxv1a1.BudgetDetails{Percent: &percent}}, serviceTarget("svc")),
		trafficPolicy("not-a-service", t0, &gwxv1a1.RetryConstraint{},
			gwxv1a1.LocalPolicyTargetReference{Group: "example.com", Kind: "Backend", Name: "svc"}),
		trafficPolicy("missing", t0, &gwxv1a1.RetryConstraint{}, serviceTarget("nope")),
		trafficPolicy("bad-interval", t0, &gwxv1a1.RetryConstraint{Budget: &gwxv1a1.BudgetDetails{Interval: &badInterval}}, serviceTarget("other")),
	)
	b := rec.last().Gateways[0].Listeners[0].HTTPRoutes[0].Rules[0].Backends[0]
	want := ir.RetryBudget{Key: ns + "/svc", Percent: 20, Interval: 10 * time.Second, MinRetries: 10, MinInterval: time.Second}
	if b.RetryBudget == nil || *b.RetryBudget != want {
		t.Errorf("backend %s: RetryBudget = %+v, want %+v (the older policy's, with the API's defaults)", b.Name, b.RetryBudget, want)
	}
	for _, tc := range []struct{ name, status, reason, message string }{
		{"defaults", "True", "Accepted", "Service " + ns + "/svc"},
		{"younger", "False", "Conflicted", "older XBackendTrafficPolicy " + ns + "/defaults"},
		{"not-a-service", "False", "Invalid", `spec.targetRefs[0]: group "example.com" kind "Backend" is not supported; accepted: a core Service`},
		{"missing", "False", "TargetNotFound", ns + "/nope"},
		{"bad-interval", "False", "Invalid", "spec.retryConstraint.budget.interval: 2h is out of range; accepted: 1s to 1h"},
	} {
		var p gwxv1a1.XBackendTrafficPolicy
		if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tc.name}, &p); err != nil {
			t.Fatalf("get policy %s: %v", tc.name, err)
		}
		if len(p.Status.Ancestors) != 1 || p.Status.Ancestors[0].AncestorRef.Name != "gw" {
			t.Errorf("policy %s: ancestors %+v, want the Gateway gw", tc.name, p.Status.Ancestors)
			continue
		}
		c := findCondition(p.Status.Ancestors[0].Conditions, "Accepted")
		if c == nil || string(c.Status) != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
			t.Errorf("policy %s: Accepted = %+v, want %s/%s with a message containing %q", tc.name, c, tc.status, tc.reason, tc.message)
		}
	}
}
