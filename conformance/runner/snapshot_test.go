package runner

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/reports"
)

// snapshotManifest is a test's manifest: a TLSRoute and a
// BackendTLSPolicy (kinds the state once left out) and an HTTPRoute, in
// two documents and a list of the suite's shape.
const snapshotManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata:
  name: tls-passthrough
  namespace: gateway-conformance-infra
spec:
  parentRefs:
  - name: same-namespace-tls
  rules:
  - backendRefs:
    - name: tls-backend
      port: 443
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata:
  name: backend-tls
  namespace: gateway-conformance-infra
spec:
  targetRefs:
  - group: ""
    kind: Service
    name: tls-backend
  validation:
    hostname: abc.example.com
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: never-created
  namespace: gateway-conformance-infra
`

// TestSnapshotHoldsWhatTheTestApplied reads the state a failed test
// leaves: the objects of its manifests, of every kind, with their own,
// their listeners', per-parent and per-ancestor conditions; what it
// created through its client; the Gateway its route attaches to and the
// endpoints of the Service it sends to; an object it applied that is not
// there, as not found; and nothing else of the namespace (a Gateway and a
// route of other tests beside them).
func TestSnapshotHoldsWhatTheTestApplied(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{gwv1.Install, discoveryv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	ns := "gateway-conformance-infra"
	section := gwv1.SectionName("tls")
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "same-namespace-tls", Generation: 2},
		Status: gwv1.GatewayStatus{
			Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "Pending", Message: strings.Repeat("m", 400), ObservedGeneration: 1}},
			Listeners: []gwv1.ListenerStatus{{Name: "tls", Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
				{Type: "Conflicted", Status: metav1.ConditionFalse, Reason: "NoConflicts"}}}},
		}}
	tlsRoute := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls-passthrough"},
		Status: gwv1.TLSRouteStatus{RouteStatus: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{
			ParentRef:  gwv1.ParentReference{Name: "same-namespace-tls", SectionName: &section},
			Conditions: []metav1.Condition{{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound"}},
		}}}}}
	policy := &gwv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backend-tls"},
		Status: gwv1.PolicyStatus{Ancestors: []gwv1.PolicyAncestorStatus{{
			AncestorRef: gwv1.ParentReference{Name: "same-namespace-tls"},
			Conditions:  []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NoValidCACertificate"}},
		}}}}
	ready, port := true, int32(443)
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls-backend-abc",
		Labels: map[string]string{discoveryv1.LabelServiceName: "tls-backend"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Port: &port}}}
	// Another test's objects in the same namespace.
	otherGW := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "same-namespace"}}
	otherRoute := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "another-test"}}
	otherSlice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infra-backend-v1-x",
		Labels: map[string]string{discoveryv1.LabelServiceName: "infra-backend-v1"}}, AddressType: discoveryv1.AddressTypeIPv4}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw, tlsRoute, policy, slice, otherGW, otherRoute, otherSlice).Build()

	applied := &appliedRecorder{}
	refs, err := manifestObjects([]fs.FS{fstest.MapFS{"tests/tls.yaml": {Data: []byte(snapshotManifest)}}}, "tests/tls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	applied.add(refs...)
	// What the test creates through its client.
	rc := recordingClient{Client: c, applied: applied}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "created-by-the-test"}}
	if err := rc.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}

	state, err := snapshot(context.Background(), c, applied.list())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range state {
		got = append(got, o.Kind+" "+o.Namespace+"/"+o.Name+" via="+o.Via+" error="+o.Error)
	}
	want := []string{
		"TLSRoute gateway-conformance-infra/tls-passthrough via= error=",
		"BackendTLSPolicy gateway-conformance-infra/backend-tls via= error=",
		"HTTPRoute gateway-conformance-infra/never-created via= error=not found: not created, or deleted before the failure",
		"ConfigMap gateway-conformance-infra/created-by-the-test via= error=",
		"Gateway gateway-conformance-infra/same-namespace-tls via=parent of TLSRoute gateway-conformance-infra/tls-passthrough error=",
		"EndpointSlice gateway-conformance-infra/tls-backend-abc via=backend of TLSRoute gateway-conformance-infra/tls-passthrough error=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("state:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := state[0]; len(r.Conditions) != 1 || r.Conditions[0].Scope != "parent gateway-conformance-infra/same-namespace-tls/tls" || r.Conditions[0].Reason != "BackendNotFound" {
		t.Errorf("the TLSRoute's state = %+v", r)
	}
	if p := state[1]; len(p.Conditions) != 1 || p.Conditions[0].Scope != "ancestor gateway-conformance-infra/same-namespace-tls" || p.Conditions[0].Health() != "unhealthy" {
		t.Errorf("the BackendTLSPolicy's state = %+v", p)
	}
	g := state[4]
	if g.Generation != 2 || len(g.Conditions) != 3 || g.Conditions[0].Type != "Programmed" || g.Conditions[0].ObservedGeneration != 1 ||
		len(g.Conditions[0].Message) > maxStateMessage+len("…") || g.Conditions[1].Scope != "listener tls" ||
		g.Conditions[2].Type != "Conflicted" || g.Conditions[2].Health() != "healthy" {
		t.Errorf("the Gateway's state = %+v", g)
	}
	if s := state[5]; s.Service != "tls-backend" || len(s.Endpoints) != 1 || s.Endpoints[0] != "10.0.0.7:443 ready" {
		t.Errorf("the slice's state = %+v", s)
	}

	rec := newRecorder(&Options{})
	rec.setState("Fails", state)
	tr := rec.testResult(plannedTest{test: suite.ConformanceTest{ShortName: "Fails"}}, true, false, nil)
	if tr.Result != reports.Fail || len(tr.State) != len(want) {
		t.Errorf("the failed test's result has %d objects of state, want %d", len(tr.State), len(want))
	}
	if tr := rec.testResult(plannedTest{test: suite.ConformanceTest{ShortName: "Passes"}}, false, false, nil); tr.State != nil {
		t.Errorf("a passed test has state %+v", tr.State)
	}
}

// TestFailureStateIsTheTestsOwn runs a failing serial test that creates
// an object through the suite's client beside a parallel test that
// creates one of its own and fails too: each failure's state holds what
// that test created, not the other's (nor the cluster's other objects).
func TestFailureStateIsTheTestsOwn(t *testing.T) {
	// The failing tests fail the test that runs them, so a child process
	// runs them (this test again, told so by the environment) and this one
	// reads the run.json it wrote.
	if dir := os.Getenv("GATEWITNESS_TEST_FAILURE_STATE_DIR"); dir != "" {
		runFailingSuite(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailureStateIsTheTestsOwn$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GATEWITNESS_TEST_FAILURE_STATE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatalf("the child run wrote no run.json: %v\n%s", err, out)
	}
	defer f.Close()
	run, err := reports.ReadRunJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	checkOwnState(t, run)
}

// runFailingSuite runs TestFailureStateIsTheTestsOwn's suite into dir.
func runFailingSuite(t *testing.T, dir string) {
	useTestProfiles(t)
	c := fakeCluster(t)
	var progress bytes.Buffer
	o := testOptions(dir, &progress)
	core := []gwfeatures.FeatureName{gwfeatures.SupportHTTPRoute}
	create := func(t *testing.T, s *suite.ConformanceTestSuite, name string) {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.Client.Create(context.Background(), crd); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	gcTests := []suite.ConformanceTest{
		{ShortName: "SerialFails", Description: "fails", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			create(t, s, "fails.example.com")
			t.Error("the serial test fails")
		}},
		{ShortName: "SerialPasses", Description: "passes", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			create(t, s, "passes.example.com")
		}},
		// It fails in a parallel subtest, which ends after the test
		// function returns: the state is read when the subtests are over.
		{ShortName: "SubtestFails", Description: "fails late", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			create(t, s, "subtest.example.com")
			t.Run("late", func(t *testing.T) {
				t.Parallel()
				t.Error("the subtest fails after its parent returned")
			})
		}},
		{ShortName: "ParallelFails", Description: "fails", Features: core, Parallel: true, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			create(t, s, "parallel.example.com")
			t.Error("the parallel test fails")
		}},
	}
	co, tgt := pluggedInProcess(&o, c)
	if _, err := runSuites(t, &o, co, tgt, nil, gcTests); err != nil {
		t.Fatal(err)
	}
}

// checkOwnState checks TestFailureStateIsTheTestsOwn's run.
func checkOwnState(t *testing.T, run *reports.Run) {
	seen := 0
	for _, tr := range run.Tests {
		var got []string
		for _, o := range tr.State {
			got = append(got, o.Kind+" "+o.Name)
		}
		switch tr.ShortName {
		case "SerialFails":
			if tr.Result != reports.Fail || strings.Join(got, ",") != "CustomResourceDefinition fails.example.com" {
				t.Errorf("SerialFails: %s with state %q; want fail with the object it created alone", tr.Result, got)
			}
		case "SubtestFails":
			if tr.Result != reports.Fail || strings.Join(got, ",") != "CustomResourceDefinition subtest.example.com" {
				t.Errorf("SubtestFails: %s with state %q; want fail with the object it created", tr.Result, got)
			}
		case "SerialPasses":
			if len(got) != 0 {
				t.Errorf("a passing test has state %q", got)
			}
		case "ParallelFails":
			// The parallel tests share the suite's client: what one
			// creates through it is not told apart; its manifests' objects
			// are (it has none here), and no other test's are there.
			if tr.Result != reports.Fail || len(got) != 0 {
				t.Errorf("ParallelFails: %s with state %q; want fail with none of the others' objects", tr.Result, got)
			}
		default:
			continue
		}
		seen++
	}
	if seen != 4 {
		t.Errorf("run.json holds %d of the four tests: %+v", seen, run.Tests)
	}
}

// TestSnapshotOfUpstreamManifests applies two of upstream's manifests
// (a TLSRoute with its Gateway; an HTTPRoute with BackendTLSPolicies and
// Services) to the in-process store as a test would, and reads the state
// of what each applied: every object of its manifest, of each kind, found
// in the store (a Service as its endpoints: none, no pods running here),
// and nothing of the other's.
func TestSnapshotOfUpstreamManifests(t *testing.T) {
	st, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gateway-conformance-infra"}}
	if err := st.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	fsys := []fs.FS{conformance.Manifests}
	apply := func(location string) []objectRef {
		t.Helper()
		data, err := fs.ReadFile(conformance.Manifests, location)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(bytes.ReplaceAll(data, []byte("{GATEWAY_CLASS_NAME}"), []byte("gc"))), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if u.Object == nil {
				continue
			}
			if err := st.Create(ctx, u); err != nil {
				t.Fatalf("%s: creating %s %s: %v", location, u.GetKind(), u.GetName(), err)
			}
		}
		refs, err := manifestObjects(fsys, location)
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	tls := apply("tests/tlsroute-simple-same-namespace.yaml")
	san := apply("tests/backendtlspolicy-san.yaml")
	for _, tc := range []struct {
		name  string
		refs  []objectRef
		kinds []string
	}{
		{"TLSRoute", tls, []string{"TLSRoute", "Gateway"}},
		{"BackendTLSPolicy", san, []string{"HTTPRoute", "BackendTLSPolicy", "Service"}},
	} {
		state, err := snapshot(ctx, st, tc.refs)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		kinds := map[string]int{}
		for _, o := range state {
			if o.Via == "" {
				kinds[o.Kind]++
				// No pods run here: a Service has no endpoints.
				if o.Error != "" && !(o.Kind == "Service" && strings.HasPrefix(o.Error, "no EndpointSlice")) {
					t.Errorf("%s: %s %s/%s: %s", tc.name, o.Kind, o.Namespace, o.Name, o.Error)
				}
			}
			for _, other := range []string{"gateway-tlsroute", "backendtlspolicy-san-test"} {
				if o.Name == other && !slices.ContainsFunc(tc.refs, func(r objectRef) bool { return r.name == other }) {
					t.Errorf("%s: the state has the other test's %s %s", tc.name, o.Kind, o.Name)
				}
			}
		}
		for _, k := range tc.kinds {
			if kinds[k] == 0 {
				t.Errorf("%s: no %s in the state of what it applied: %v", tc.name, k, kinds)
			}
		}
		t.Logf("%s: %d objects in the state (applied, by kind: %v)", tc.name, len(state), kinds)
	}
}
