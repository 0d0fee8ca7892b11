package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
)

func newStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fromYAML decodes one manifest into an unstructured object.
func fromYAML(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&u.Object); err != nil {
		t.Fatalf("decoding manifest: %v", err)
	}
	return u
}

func mustCreate(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("Create %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
}

func httpRoute(ns, name string) *gatewayv1.HTTPRoute {
	port := gatewayv1.PortNumber(8080)
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Rules: []gatewayv1.HTTPRouteRule{{
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{Name: "svc", Port: &port}}}},
			}},
		},
	}
}

func TestCreateGetAndServedVersions(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := httpRoute("default", "r1")
	mustCreate(t, s, r)
	if r.UID == "" || r.ResourceVersion == "" || r.CreationTimestamp.IsZero() || r.Generation != 1 {
		t.Fatalf("created object lacks system fields: uid %q rv %q created %v generation %d", r.UID, r.ResourceVersion, r.CreationTimestamp, r.Generation)
	}

	got := &gatewayv1.HTTPRoute{}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "r1"}, got); err != nil {
		t.Fatal(err)
	}
	if got.UID != r.UID || got.ResourceVersion != r.ResourceVersion {
		t.Fatalf("Get = uid %s rv %s, want %s %s", got.UID, got.ResourceVersion, r.UID, r.ResourceVersion)
	}

	// The CRD serves v1beta1 too; only apiVersion differs.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1beta1", Kind: "HTTPRoute"})
	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "r1"}, u); err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "gateway.networking.k8s.io/v1beta1" || u.GetUID() != r.UID {
		t.Fatalf("v1beta1 Get = %s %s", u.GetAPIVersion(), u.GetUID())
	}

	err := s.Create(ctx, httpRoute("default", "r1"))
	if !apierrors.IsAlreadyExists(err) || err.Error() != `httproutes.gateway.networking.k8s.io "r1" already exists` {
		t.Fatalf("second Create error = %v, want AlreadyExists", err)
	}
	err = s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "nope"}, &gatewayv1.HTTPRoute{})
	if !apierrors.IsNotFound(err) || err.Error() != `httproutes.gateway.networking.k8s.io "nope" not found` {
		t.Fatalf("Get missing error = %v", err)
	}
	err = s.Create(ctx, httpRoute("no-such-ns", "r1"))
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "no-such-ns" not found` {
		t.Fatalf("Create in missing namespace error = %v", err)
	}

	gvk, err := s.GroupVersionKindFor(&gatewayv1.HTTPRoute{})
	if err != nil || gvk.Kind != "HTTPRoute" || gvk.Version != "v1" {
		t.Fatalf("GroupVersionKindFor = %v, %v", gvk, err)
	}
	if nsd, err := s.IsObjectNamespaced(&corev1.Namespace{}); err != nil || nsd {
		t.Fatalf("IsObjectNamespaced(Namespace) = %v, %v", nsd, err)
	}
	m, err := s.RESTMapper().RESTMapping(schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "GRPCRoute"}, "v1")
	if err != nil || m.Resource.Resource != "grpcroutes" {
		t.Fatalf("RESTMapping(GRPCRoute) = %+v, %v", m, err)
	}
	if err := s.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Nope", "metadata": map[string]any{"name": "x"}}}); !meta.IsNoMatchError(err) {
		t.Fatalf("Create of an unknown kind error = %v, want a no-match error", err)
	}
}

func TestUpdateConflicts(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := httpRoute("default", "r")
	mustCreate(t, s, r)
	stale := r.DeepCopy()

	r.Labels = map[string]string{"a": "b"}
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	stale.Labels = map[string]string{"a": "c"}
	err := s.Update(ctx, stale)
	want := `Operation cannot be fulfilled on httproutes.gateway.networking.k8s.io "r": the object has been modified; please apply your changes to the latest version and try again`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("stale Update error = %v, want %s", err, want)
	}

	// CRD kinds do not allow unconditional updates.
	r.ResourceVersion = ""
	err = s.Update(ctx, r)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.resourceVersion: Invalid value: "": must be specified for an update`) {
		t.Fatalf("Update without resourceVersion error = %v", err)
	}
	// Built-in kinds do.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm"}, Data: map[string]string{"k": "1"}}
	mustCreate(t, s, cm)
	cm.ResourceVersion = ""
	cm.Data["k"] = "2"
	if err := s.Update(ctx, cm); err != nil {
		t.Fatalf("unconditional ConfigMap Update: %v", err)
	}
	if err := s.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "missing"}}); !apierrors.IsNotFound(err) {
		t.Fatalf("Update of a missing object error = %v", err)
	}
}

func TestGenerationAndStatusSubresource(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := httpRoute("default", "r")
	r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/c"}}
	mustCreate(t, s, r)
	if len(r.Status.Parents) != 0 {
		t.Fatalf("Create kept status: %+v", r.Status)
	}

	// Metadata-only change: no generation bump.
	r.Labels = map[string]string{"x": "y"}
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if r.Generation != 1 {
		t.Fatalf("generation after a label change = %d, want 1", r.Generation)
	}

	// Status through the main resource is ignored.
	r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/c",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if len(r.Status.Parents) != 0 || r.Generation != 1 {
		t.Fatalf("main Update changed status or generation: %+v gen %d", r.Status, r.Generation)
	}

	// Status().Update changes status only.
	r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/c",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	r.Spec.Hostnames = []gatewayv1.Hostname{"ignored.example.com"}
	if err := s.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if len(r.Status.Parents) != 1 || len(r.Spec.Hostnames) != 0 || r.Generation != 1 {
		t.Fatalf("Status().Update: status %d parents, hostnames %v, generation %d; want 1, none, 1", len(r.Status.Parents), r.Spec.Hostnames, r.Generation)
	}

	// A spec change bumps generation and keeps status.
	r.Spec.Hostnames = []gatewayv1.Hostname{"a.example.com"}
	r.Status = gatewayv1.HTTPRouteStatus{}
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if r.Generation != 2 || len(r.Status.Parents) != 1 {
		t.Fatalf("after spec change: generation %d status parents %d, want 2 and 1", r.Generation, len(r.Status.Parents))
	}

	// A status update is validated against the status schema.
	r.Status.Parents[0].ControllerName = "not a domain/path"
	err := s.Status().Update(ctx, r)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.parents[0].controllerName") {
		t.Fatalf("invalid status update error = %v", err)
	}

	// ConfigMap has no status subresource.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm"}}
	mustCreate(t, s, cm)
	if err := s.Status().Update(ctx, cm); !apierrors.IsNotFound(err) {
		t.Fatalf("Status().Update of a ConfigMap error = %v, want NotFound", err)
	}
}

func TestNoOpUpdateWritesNothing(t *testing.T) {
	s := newStore(t)
	r := httpRoute("default", "r")
	mustCreate(t, s, r)
	rv := r.ResourceVersion
	if err := s.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if r.ResourceVersion != rv {
		t.Fatalf("a no-op update changed resourceVersion %s -> %s", rv, r.ResourceVersion)
	}
}

func TestPatch(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := httpRoute("default", "r")
	mustCreate(t, s, r)

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hostnames":["m.example.com"]}}`))
	if err := s.Patch(ctx, r, patch); err != nil {
		t.Fatal(err)
	}
	if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "m.example.com" || r.Generation != 2 {
		t.Fatalf("after merge patch: hostnames %v generation %d", r.Spec.Hostnames, r.Generation)
	}
	jp := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels","value":{"p":"q"}}]`))
	if err := s.Patch(ctx, r, jp); err != nil {
		t.Fatal(err)
	}
	if r.Labels["p"] != "q" {
		t.Fatalf("after JSON patch: labels %v", r.Labels)
	}

	// MergeFromWithOptimisticLock carries the resourceVersion.
	base := r.DeepCopy()
	base.ResourceVersion = "1"
	r2 := base.DeepCopy()
	r2.Spec.Hostnames = nil
	err := s.Patch(ctx, r2, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if !apierrors.IsConflict(err) {
		t.Fatalf("optimistic-lock patch with a stale resourceVersion error = %v, want Conflict", err)
	}

	// Status patch changes status only.
	st := r.DeepCopy()
	st.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/c",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	st.Spec.Hostnames = []gatewayv1.Hostname{"status-patch.example.com"}
	if err := s.Status().Patch(ctx, st, client.MergeFrom(r)); err != nil {
		t.Fatal(err)
	}
	if len(st.Status.Parents) != 1 || st.Spec.Hostnames[0] != "m.example.com" {
		t.Fatalf("after status patch: parents %d hostnames %v", len(st.Status.Parents), st.Spec.Hostnames)
	}

	// Strategic merge patch: built-in kinds yes, CRD kinds no (as a cluster).
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "svc"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	mustCreate(t, s, svc)
	smp := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"ports":[{"name":"grpc","port":9000}]}}`))
	if err := s.Patch(ctx, svc, smp); err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 2 {
		t.Fatalf("strategic merge patch replaced the ports list instead of merging by port: %+v", svc.Spec.Ports)
	}
	err = s.Patch(ctx, r, smp)
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 415 {
		t.Fatalf("strategic merge patch of an HTTPRoute error = %v, want 415", err)
	}
	if err := s.Patch(ctx, r, client.Apply); err == nil || !strings.Contains(err.Error(), "server-side apply is not supported") {
		t.Fatalf("apply patch error = %v", err)
	}
}

func TestListSelectors(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	for _, c := range []struct{ ns, name, app string }{{"default", "a", "x"}, {"default", "b", "y"}, {"other", "c", "x"}} {
		mustCreate(t, s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: c.name, Labels: map[string]string{"app": c.app}}})
	}
	names := func(opts ...client.ListOption) []string {
		t.Helper()
		l := &corev1.ConfigMapList{}
		if err := s.List(ctx, l, opts...); err != nil {
			t.Fatal(err)
		}
		if l.ResourceVersion == "" {
			t.Fatal("list has no resourceVersion")
		}
		var out []string
		for _, i := range l.Items {
			out = append(out, i.Namespace+"/"+i.Name)
		}
		return out
	}
	check := func(got []string, want string) {
		t.Helper()
		if strings.Join(got, ",") != want {
			t.Fatalf("got %v, want %s", got, want)
		}
	}
	check(names(), "default/a,default/b,other/c")
	check(names(client.InNamespace("default")), "default/a,default/b")
	check(names(client.MatchingLabels{"app": "x"}), "default/a,other/c")
	check(names(client.MatchingFields{"metadata.name": "b"}), "default/b")
	check(names(client.MatchingFields{"metadata.namespace": "other"}), "other/c")
	check(names(client.Limit(2)), "default/a,default/b")

	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
	if err := s.List(ctx, ul, client.InNamespace("other")); err != nil || len(ul.Items) != 1 || ul.Items[0].GetName() != "c" {
		t.Fatalf("unstructured List = %v, %v", ul.Items, err)
	}
	err := s.List(ctx, &corev1.ConfigMapList{}, client.MatchingFields{"spec.x": "y"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "spec.x") {
		t.Fatalf("unsupported field selector error = %v", err)
	}

	if err := s.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("default"), client.MatchingLabels{"app": "x"}); err != nil {
		t.Fatal(err)
	}
	check(names(), "default/b,other/c")
}

func TestFinalizers(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := httpRoute("default", "r")
	r.Finalizers = []string{"example.com/hold"}
	mustCreate(t, s, r)
	if err := s.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	got := &gatewayv1.HTTPRoute{}
	if err := s.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatalf("object with a finalizer is gone after Delete: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set")
	}
	got.Finalizers = append(got.Finalizers, "example.com/another")
	if err := s.Update(ctx, got); !apierrors.IsInvalid(err) {
		t.Fatalf("adding a finalizer to a deleting object error = %v, want Invalid", err)
	}
	got.Finalizers = nil
	if err := s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(ctx, client.ObjectKeyFromObject(r), got); !apierrors.IsNotFound(err) {
		t.Fatalf("object still there after its last finalizer went: %v", err)
	}
}

func TestOwnerCascade(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}
	mustCreate(t, s, owner)
	mustCreate(t, s, other)
	ref := func(o *corev1.ConfigMap) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID}
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dep", OwnerReferences: []metav1.OwnerReference{ref(owner)}}}
	grand := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "grand"}}
	shared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared", OwnerReferences: []metav1.OwnerReference{ref(owner), ref(other)}}}
	mustCreate(t, s, dep)
	grand.OwnerReferences = []metav1.OwnerReference{ref(dep)}
	mustCreate(t, s, grand)
	mustCreate(t, s, shared)

	if err := s.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dep", "grand"} {
		if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("dependent %s survived its owner: %v", name, err)
		}
	}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shared"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("object with a remaining owner was deleted: %v", err)
	}

	// Orphan keeps dependents and drops the reference.
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphan", OwnerReferences: []metav1.OwnerReference{ref(other)}}}
	mustCreate(t, s, orphan)
	if err := s.Delete(ctx, other, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, client.ObjectKeyFromObject(orphan), got); err != nil || len(got.OwnerReferences) != 0 {
		t.Fatalf("orphaned dependent: err %v ownerReferences %v", err, got.OwnerReferences)
	}
}

func TestNamespaceDeletion(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	mustCreate(t, s, ns)
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("new namespace phase %q, want Active", ns.Status.Phase)
	}
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "doomed", Name: "held", Finalizers: []string{"example.com/hold"}}}
	mustCreate(t, s, held)
	mustCreate(t, s, httpRoute("doomed", "r"))

	if err := s.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "doomed", Name: "r"}, &gatewayv1.HTTPRoute{}); !apierrors.IsNotFound(err) {
		t.Fatalf("route in deleted namespace: %v", err)
	}
	got := &corev1.Namespace{}
	if err := s.Get(ctx, client.ObjectKey{Name: "doomed"}, got); err != nil || got.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace with a held object: err %v phase %q, want Terminating", err, got.Status.Phase)
	}
	err := s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "doomed", Name: "late"}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "unable to create new content in namespace doomed because it is being terminated") {
		t.Fatalf("Create in a terminating namespace error = %v", err)
	}

	if err := s.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if err := s.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(ctx, client.ObjectKey{Name: "doomed"}, got); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there once empty: %v", err)
	}
}

func TestBuiltinDefaultsAndNames(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	b := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	mustCreate(t, s, a)
	mustCreate(t, s, b)
	if a.Spec.Type != corev1.ServiceTypeClusterIP || a.Spec.Ports[0].Protocol != corev1.ProtocolTCP || a.Spec.Ports[0].TargetPort.IntValue() != 80 {
		t.Fatalf("service defaults: %+v", a.Spec)
	}
	if !strings.HasPrefix(a.Spec.ClusterIP, "10.96.") || a.Spec.ClusterIP == b.Spec.ClusterIP || len(a.Spec.ClusterIPs) != 1 {
		t.Fatalf("clusterIPs %q and %q: want distinct addresses in 10.96.0.0/16", a.Spec.ClusterIP, b.Spec.ClusterIP)
	}
	a.Spec.ClusterIP = ""
	a.Spec.ClusterIPs = nil
	if err := s.Update(ctx, a); err != nil || !strings.HasPrefix(a.Spec.ClusterIP, "10.96.") {
		t.Fatalf("update dropped the clusterIP: %q, %v", a.Spec.ClusterIP, err)
	}

	err := s.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "Bad_Name"}})
	want := `Service "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("bad Service name error =\n%v\nwant\n%s", err, want)
	}

	u := fromYAML(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-, namespace: default}\nunknownTopLevel: 1\n")
	mustCreate(t, s, u)
	if !strings.HasPrefix(u.GetName(), "gen-") || len(u.GetName()) != len("gen-")+5 {
		t.Fatalf("generateName gave %q", u.GetName())
	}
	if _, has := u.Object["unknownTopLevel"]; has {
		t.Fatal("unknown field of a built-in kind was kept")
	}
}

// TestConcurrentWrites checks optimistic concurrency now that status
// writes and patches are validated outside the store's lock: of writes
// that name the same resourceVersion (of the main resource or of status)
// exactly one wins and the others conflict, and patches (which name none)
// are all applied, each on the result of the others.
func TestConcurrentWrites(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	r := httpRoute("default", "r")
	mustCreate(t, s, r)
	const writers = 8
	var wg sync.WaitGroup
	for _, status := range []bool{false, true} {
		errs := make(chan error, writers)
		if err := s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			t.Fatal(err)
		}
		for i := range writers {
			mine := r.DeepCopy()
			if status {
				mine.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"},
					ControllerName: gatewayv1.GatewayController(fmt.Sprintf("example.com/c%d", i)),
					Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
						LastTransitionTime: metav1.Now()}}}}
				wg.Go(func() { errs <- s.Status().Update(ctx, mine) })
				continue
			}
			mine.Labels = map[string]string{"writer": fmt.Sprint(i)}
			wg.Go(func() { errs <- s.Update(ctx, mine) })
		}
		wg.Wait()
		close(errs)
		won, conflicts := 0, 0
		for err := range errs {
			switch {
			case err == nil:
				won++
			case apierrors.IsConflict(err):
				conflicts++
			default:
				t.Errorf("update (status %v): %v", status, err)
			}
		}
		if won != 1 || conflicts != writers-1 {
			t.Errorf("updates (status %v) naming one resourceVersion: %d won, %d conflicted; want 1 and %d", status, won, conflicts, writers-1)
		}
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm"}}
	mustCreate(t, s, cm)
	const each = 10
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"data":{"k%d-%d":"v"}}`, i, j))
				if err := s.Patch(ctx, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}, patch); err != nil {
					t.Errorf("patch %d-%d: %v", i, j, err)
				}
			}
		})
	}
	wg.Wait()
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != writers*each {
		t.Errorf("after %d concurrent patches the ConfigMap has %d keys, want all of them", writers*each, len(got.Data))
	}
}

// TestReadersCannotChangeStoredObjects changes, deep inside, every object
// the store hands out (after Create, Get, List, a status write and a watch
// event, typed and unstructured) and checks that the stored object is
// unchanged: the store decodes typed objects from its own maps, once per write.
// The writer and every typed watcher of a write get copies of one decoding
// of it, so a second watcher's events are checked too.
func TestReadersCannotChangeStoredObjects(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	w, err := s.Watch(ctx, &gatewayv1.HTTPRouteList{}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	w2, err := s.Watch(ctx, &gatewayv1.HTTPRouteList{}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	intact := func(g *gatewayv1.HTTPRoute) bool {
		return g.Labels["app"] == "a" && g.Spec.ParentRefs[0].Name == "gw" && *g.Spec.Rules[0].BackendRefs[0].Port == 8080 && *g.Spec.Rules[0].Matches[0].Path.Value == "/"
	}
	r := httpRoute("default", "r")
	r.Labels = map[string]string{"app": "a"}
	mustCreate(t, s, r)
	spoil := func(r *gatewayv1.HTTPRoute) {
		r.Labels["app"] = "spoiled"
		r.Spec.ParentRefs[0].Name = "spoiled"
		*r.Spec.Rules[0].BackendRefs[0].Port = 1
		*r.Spec.Rules[0].Matches[0].Path.Value = "/spoiled"
	}
	check := func(after string) {
		t.Helper()
		g := &gatewayv1.HTTPRoute{}
		if err := s.Get(ctx, client.ObjectKeyFromObject(r), g); err != nil {
			t.Fatal(err)
		}
		if !intact(g) {
			t.Fatalf("after changing what %s returned, the stored route is %+v", after, g)
		}
	}
	spoil(r)
	check("Create")

	g := &gatewayv1.HTTPRoute{}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "r"}, g); err != nil {
		t.Fatal(err)
	}
	spoil(g)
	check("Get")

	var list gatewayv1.HTTPRouteList
	if err := s.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	spoil(&list.Items[0])
	check("List")

	ev := <-w.ResultChan()
	spoil(ev.Object.(*gatewayv1.HTTPRoute))
	check("a watch event")
	if ev := <-w2.ResultChan(); !intact(ev.Object.(*gatewayv1.HTTPRoute)) {
		t.Fatalf("after changing what Create and the first watcher returned, the second watcher got %+v", ev.Object)
	}

	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "r"}, g); err != nil {
		t.Fatal(err)
	}
	g.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/c",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	if err := s.Status().Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	// The answer and the events of a status write share the decoding of
	// the spec with the previous version: they must equal a fresh decoding.
	fresh := &gatewayv1.HTTPRoute{}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "r"}, fresh); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(g, fresh) || len(g.Status.Parents) != 1 {
		t.Fatalf("a status write answered %+v, a Get after it gives %+v", g, fresh)
	}
	spoil(g)
	check("a status write")
	ev = <-w.ResultChan()
	spoil(ev.Object.(*gatewayv1.HTTPRoute))
	if ev := <-w2.ResultChan(); !equality.Semantic.DeepEqual(ev.Object, fresh) {
		t.Fatalf("after changing what a status write and the first watcher returned, the second watcher got %+v, want %+v", ev.Object, fresh)
	}
	g = fresh.DeepCopy()
	g.Status.Parents[0].Conditions[0].Message = "again"
	if err := s.Status().Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	spoil(g)
	check("a second status write")
	for _, ev := range []watch.Event{<-w.ResultChan(), <-w2.ResultChan()} {
		if r := ev.Object.(*gatewayv1.HTTPRoute); !intact(r) || r.Status.Parents[0].Conditions[0].Message != "again" {
			t.Fatalf("after a second status write a watcher got %+v", r)
		}
	}

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute"))
	if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "r"}, u); err != nil {
		t.Fatal(err)
	}
	refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "parentRefs")
	refs[0].(map[string]any)["name"] = "spoiled"
	u.Object["spec"].(map[string]any)["parentRefs"].([]any)[0].(map[string]any)["name"] = "spoiled"
	check("an unstructured Get")
}
