package runner

import (
	"context"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/reports"
)

// TestSnapshot reads what a failed test leaves: the Gateway's own and
// its listeners' conditions, the route's per parent, the Service's
// endpoints, in the suites' namespaces only, Gateways first; and the
// recorder gives it to the failed test's result.
func TestSnapshot(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{gwv1.Install, discoveryv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	ns := "gateway-conformance-infra"
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "same-namespace", Generation: 2},
		Status: gwv1.GatewayStatus{
			Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "Pending", Message: strings.Repeat("m", 400), ObservedGeneration: 1}},
			Listeners:  []gwv1.ListenerStatus{{Name: "http", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}}}},
		}}
	other := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "not-ours"}}
	section := gwv1.SectionName("http")
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gateway-conformance-infra-test"},
		Status: gwv1.HTTPRouteStatus{RouteStatus: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{
			ParentRef:  gwv1.ParentReference{Name: "same-namespace", SectionName: &section},
			Conditions: []metav1.Condition{{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound"}},
		}}}}}
	ready, port := true, int32(3000)
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infra-backend-v1-abc",
		Labels: map[string]string{discoveryv1.LabelServiceName: "infra-backend-v1"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Port: &port}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw, other, route, slice).Build()

	state, err := snapshot(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(state) != 3 || state[0].Kind != "Gateway" || state[1].Kind != "HTTPRoute" || state[2].Kind != "EndpointSlice" {
		t.Fatalf("state = %+v; want the Gateway, the route and the slice of %s, in that order", state, ns)
	}
	g := state[0]
	if g.Generation != 2 || len(g.Conditions) != 2 || g.Conditions[0].Type != "Programmed" || g.Conditions[0].ObservedGeneration != 1 ||
		len(g.Conditions[0].Message) > maxStateMessage+len("…") || g.Conditions[1].Scope != "listener http" {
		t.Errorf("the Gateway's state = %+v", g)
	}
	if r := state[1]; len(r.Conditions) != 1 || r.Conditions[0].Scope != "parent gateway-conformance-infra/same-namespace/http" || r.Conditions[0].Reason != "BackendNotFound" {
		t.Errorf("the route's state = %+v", r)
	}
	if s := state[2]; s.Service != "infra-backend-v1" || len(s.Endpoints) != 1 || s.Endpoints[0] != "10.0.0.7:3000 ready" {
		t.Errorf("the slice's state = %+v", s)
	}

	rec := newRecorder(&Options{})
	rec.setState("Fails", state)
	tr := rec.testResult(plannedTest{test: suite.ConformanceTest{ShortName: "Fails"}}, true, false, nil)
	if tr.Result != reports.Fail || len(tr.State) != 3 {
		t.Errorf("the failed test's result has %d objects of state, want 3", len(tr.State))
	}
	if tr := rec.testResult(plannedTest{test: suite.ConformanceTest{ShortName: "Passes"}}, false, false, nil); tr.State != nil {
		t.Errorf("a passed test has state %+v", tr.State)
	}
}
