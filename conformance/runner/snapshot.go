package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/reports"
)

// snapshotTimeout bounds the reads of one snapshot.
const snapshotTimeout = 10 * time.Second

// maxStateMessage bounds a condition's message in a snapshot.
const maxStateMessage = 300

// objectRef names an object a test applied, or one they refer to.
type objectRef struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	// via is empty for an object the test applied, else how an applied
	// object refers to it ("parent of HTTPRoute ns/name").
	via string
}

func (r objectRef) key() string {
	return r.gvk.GroupKind().String() + "/" + r.namespace + "/" + r.name
}

// appliedRecorder keeps the objects a test applied: those of its
// manifests and those it created or changed through its client.
type appliedRecorder struct {
	mu   sync.Mutex
	refs []objectRef
	at   map[string]int // index in refs by key
}

// add keeps refs, each once: an object both applied and referred to is
// kept as applied.
func (a *appliedRecorder) add(refs ...objectRef) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.at == nil {
		a.at = map[string]int{}
	}
	for _, r := range refs {
		if r.name == "" || r.gvk.Kind == "" {
			continue
		}
		if i, ok := a.at[r.key()]; ok {
			if r.via == "" {
				a.refs[i].via = ""
			}
			continue
		}
		a.at[r.key()] = len(a.refs)
		a.refs = append(a.refs, r)
	}
}

func (a *appliedRecorder) list() []objectRef {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.refs)
}

// manifestObjects returns the objects of the manifest at location in the
// first of fsys that holds it (as upstream's Applier reads it), with the
// Gateways they attach to and the Services they send to.
func manifestObjects(fsys []fs.FS, location string) ([]objectRef, error) {
	var data []byte
	var err error
	for _, f := range fsys {
		if data, err = fs.ReadFile(f, location); err == nil {
			break
		}
	}
	if data == nil {
		return nil, fmt.Errorf("reading the manifest %s: %w", location, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []objectRef
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err == io.EOF {
			break
		} else if err != nil {
			return out, fmt.Errorf("reading the manifest %s: %w", location, err)
		}
		if u.Object == nil || u.GetKind() == "" {
			continue
		}
		ref := objectRef{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()}
		out = append(append(out, ref), referredBy(&u, ref)...)
	}
	return out, nil
}

// referredBy returns what an object of a test refers to and a reader of
// its failure needs beside it: the Gateways a route attaches to, the
// Services a route sends to and a policy targets.
func referredBy(u *unstructured.Unstructured, by objectRef) []objectRef {
	var out []objectRef
	ref := func(m map[string]any, defGroup, defKind, role string) {
		group, _, _ := unstructured.NestedString(m, "group")
		kind, _, _ := unstructured.NestedString(m, "kind")
		name, _, _ := unstructured.NestedString(m, "name")
		ns, _, _ := unstructured.NestedString(m, "namespace")
		if kind == "" {
			kind, group = defKind, defGroup
		}
		if ns == "" {
			ns = by.namespace
		}
		out = append(out, objectRef{gvk: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, namespace: ns, name: name,
			via: role + " of " + by.gvk.Kind + " " + by.namespace + "/" + by.name})
	}
	for _, p := range nestedMaps(u.Object, "spec", "parentRefs") {
		ref(p, "gateway.networking.k8s.io", "Gateway", "parent")
	}
	for _, rule := range nestedMaps(u.Object, "spec", "rules") {
		items, _, _ := unstructured.NestedSlice(rule, "backendRefs")
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				ref(m, "", "Service", "backend")
			}
		}
	}
	for _, t := range nestedMaps(u.Object, "spec", "targetRefs") {
		ref(t, "", "Service", "target")
	}
	// Only kinds whose state says something: a Service's is its
	// EndpointSlices, a Gateway's its conditions.
	return slices.DeleteFunc(out, func(r objectRef) bool {
		return r.name == "" || !(r.gvk.Kind == "Gateway" && r.gvk.Group == "gateway.networking.k8s.io" || r.gvk.Kind == "Service" && r.gvk.Group == "")
	})
}

// recordingClient is a client that keeps what is created, updated or
// patched through it as objects the test applied.
type recordingClient struct {
	client.Client
	applied *appliedRecorder
}

func (c recordingClient) keep(obj client.Object) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return
	}
	c.applied.add(objectRef{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()})
}

func (c recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.keep(obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c recordingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.keep(obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.keep(obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// snapshot reads, through c, the state of the objects a failed test
// applied and of those they refer to (refs): each one's status
// conditions (its own, its listeners', per parent or ancestor), the
// endpoints of a Service's EndpointSlices, or that it is not there; at
// most reports.MaxStateObjects objects, the applied first. An object
// that cannot be read is named with the error.
func snapshot(ctx context.Context, c client.Client, refs []objectRef) ([]reports.ObjectState, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	refs = slices.Clone(refs)
	slices.SortStableFunc(refs, func(a, b objectRef) int {
		if (a.via == "") != (b.via == "") {
			if a.via == "" {
				return -1
			}
			return 1
		}
		return 0
	})
	var out []reports.ObjectState
	var errs []error
	seen := map[string]bool{}
	for _, r := range refs {
		if len(out) >= reports.MaxStateObjects {
			break
		}
		if seen[r.key()] {
			continue
		}
		seen[r.key()] = true
		states, err := readState(ctx, c, r)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, states...)
	}
	if len(out) > reports.MaxStateObjects {
		out = out[:reports.MaxStateObjects]
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("reading the state at the failure: %w", errors.Join(errs...))
	}
	return out, nil
}

// readState reads one object's state: a Service's is that of its
// EndpointSlices.
func readState(ctx context.Context, c client.Client, r objectRef) ([]reports.ObjectState, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.gvk)
	ns := r.namespace
	if ns == "" {
		if namespaced, err := c.IsObjectNamespaced(u); err == nil && namespaced {
			ns = "default"
		}
	}
	o := reports.ObjectState{Kind: r.gvk.Kind, Namespace: ns, Name: r.name, Via: r.via}
	if r.gvk.Kind == "Service" && r.gvk.Group == "" {
		var eps discoveryv1.EndpointSliceList
		if err := c.List(ctx, &eps, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: r.name}); err != nil {
			o.Error = "its EndpointSlices could not be read: " + err.Error()
			return []reports.ObjectState{o}, nil
		}
		var out []reports.ObjectState
		for _, s := range eps.Items {
			out = append(out, endpointSliceState(&s, r.via))
		}
		if len(out) == 0 {
			o.Service = r.name
			o.Error = "no EndpointSlice: the Service has no endpoints"
			return []reports.ObjectState{o}, nil
		}
		return out, nil
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, u)
	switch {
	case apierrors.IsNotFound(err):
		o.Error = "not found: not created, or deleted before the failure"
		return []reports.ObjectState{o}, nil
	case err != nil:
		o.Error = "could not be read: " + err.Error()
		return []reports.ObjectState{o}, fmt.Errorf("%s %s/%s: %w", r.gvk.Kind, ns, r.name, err)
	}
	o.Generation = u.GetGeneration()
	o.Conditions = statusConditions(u.Object)
	return []reports.ObjectState{o}, nil
}

func endpointSliceState(s *discoveryv1.EndpointSlice, via string) reports.ObjectState {
	o := reports.ObjectState{Kind: "EndpointSlice", Namespace: s.Namespace, Name: s.Name, Generation: s.Generation,
		Service: s.Labels[discoveryv1.LabelServiceName], Via: via}
	for _, e := range s.Endpoints {
		ready := "not ready"
		if e.Conditions.Ready != nil && *e.Conditions.Ready {
			ready = "ready"
		}
		for _, a := range e.Addresses {
			for _, p := range s.Ports {
				port := "?"
				if p.Port != nil {
					port = fmt.Sprint(*p.Port)
				}
				o.Endpoints = append(o.Endpoints, a+":"+port+" "+ready)
			}
		}
	}
	return o
}

// statusConditions reads the conditions of any kind's status: its own
// (status.conditions), its listeners' (a Gateway's, a ListenerSet's), per
// parent (a route's) and per ancestor (a policy's).
func statusConditions(obj map[string]any) []reports.StateCondition {
	own, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	out := conditions("", own)
	for _, l := range nestedMaps(obj, "status", "listeners") {
		name, _, _ := unstructured.NestedString(l, "name")
		cs, _, _ := unstructured.NestedSlice(l, "conditions")
		out = append(out, conditions("listener "+name, cs)...)
	}
	for _, field := range []string{"parents", "ancestors"} {
		for _, p := range nestedMaps(obj, "status", field) {
			refField := "parentRef"
			if field == "ancestors" {
				refField = "ancestorRef"
			}
			ref, _, _ := unstructured.NestedMap(p, refField)
			name, _, _ := unstructured.NestedString(ref, "name")
			ns, _, _ := unstructured.NestedString(ref, "namespace")
			if ns == "" {
				ns, _, _ = unstructured.NestedString(obj, "metadata", "namespace")
			}
			scope := strings.TrimSuffix(field, "s") + " " + ns + "/" + name
			if section, _, _ := unstructured.NestedString(ref, "sectionName"); section != "" {
				scope += "/" + section
			}
			cs, _, _ := unstructured.NestedSlice(p, "conditions")
			out = append(out, conditions(scope, cs)...)
		}
	}
	return out
}

func nestedMaps(obj map[string]any, path ...string) []map[string]any {
	items, _, _ := unstructured.NestedSlice(obj, path...)
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func conditions(scope string, cs []any) []reports.StateCondition {
	var out []reports.StateCondition
	for _, it := range cs {
		c, ok := it.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _, _ := unstructured.NestedString(c, k); return s }
		msg := str("message")
		if len(msg) > maxStateMessage {
			msg = msg[:maxStateMessage] + "…"
		}
		og, _, _ := unstructured.NestedInt64(c, "observedGeneration")
		out = append(out, reports.StateCondition{Scope: scope, Type: str("type"), Status: str("status"), Reason: str("reason"),
			Message: msg, ObservedGeneration: og})
	}
	return out
}
