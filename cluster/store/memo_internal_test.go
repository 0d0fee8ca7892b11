package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/gateway-api/conformance"
)

// badRoutes are HTTPRoute specs that break CEL rules of the CRD, each at
// a different depth: on spec.rules, on a rule, on a filter, on a match's
// path, on a timeouts object and on parentRefs.
var badRoutes = []string{
	`{parentRefs: [{name: gw}], rules: [{name: a, backendRefs: [{name: s, port: 80}]}, {name: a, backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{matches: [{path: {type: PathPrefix, value: "/a//b"}}], backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{matches: [{path: {type: Exact, value: "/x/../y"}}, {path: {type: PathPrefix, value: "/#"}}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{filters: [{type: RequestRedirect, requestRedirect: {port: 8080}}, {type: URLRewrite, urlRewrite: {hostname: h}}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{filters: [{type: RequestHeaderModifier}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replacePrefixMatch: /p}}}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{timeouts: {request: 1s, backendRequest: 2s}, backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}, {name: gw}], rules: [{backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw, port: 80}, {name: gw}], rules: [{backendRefs: [{name: s}]}]}`,
}

// badSchemaRoutes break the OpenAPI schema of the CRD: a pattern, an
// enum, a maximum, a list's maxItems, a required field, a type.
var badSchemaRoutes = []string{
	`{parentRefs: [{name: gw}], rules: [{timeouts: {request: abc}, backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{matches: [{path: {type: Regex2, value: /}}]}]}`,
	`{parentRefs: [{name: gw, port: 70000}], rules: [{backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}], hostnames: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q], rules: [{backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}], rules: [{backendRefs: [{port: 80}]}]}`,
	`{parentRefs: [{name: gw}], hostnames: ["Not_A_Host!"], rules: [{backendRefs: [{name: s, port: "eighty"}]}]}`,
}

// goodRoutes pass every rule.
var goodRoutes = []string{
	`{parentRefs: [{name: gw}], rules: [{backendRefs: [{name: s, port: 80}]}]}`,
	`{parentRefs: [{name: gw}], hostnames: [a.example.com], rules: [{name: a, matches: [{path: {type: PathPrefix, value: /a}}], timeouts: {request: 2s, backendRequest: 1s}}, {name: b}]}`,
	`{parentRefs: [{name: gw, sectionName: http}], rules: [{filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: y}]}}]}]}`,
}

// TestMemoAgrees validates, with the upstream validators of each CRD
// (OpenAPI schema and CEL) and with the openAPIMemo and celTree creates
// use, every Gateway API object in upstream's conformance manifests and the
// HTTPRoutes above, each twice (the second time from the memos), and wants
// the same errors from both.
func TestMemoAgrees(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	for _, spec := range slices.Concat(badRoutes, badSchemaRoutes, goodRoutes) {
		objs = append(objs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "r", "namespace": "default"},
			"spec":     decodeYAML(t, spec),
		})
	}
	// Statuses, good and bad: the schema validates status as a part of the
	// object (status writes use the status schema the same way).
	for _, st := range []string{
		`{parents: [{parentRef: {name: gw}, controllerName: example.com/c, conditions: [{type: Accepted, status: "True", reason: Accepted, message: ok, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}]}]}`,
		`{parents: [{parentRef: {name: gw}, controllerName: example.com/c, conditions: [{type: Accepted, status: Maybe, reason: "", message: ok, lastTransitionTime: "2026-01-01T00:00:00Z"}]}]}`,
		`{parents: [{parentRef: {name: gw}, controllerName: "not a controller name", conditions: []}]}`,
	} {
		objs = append(objs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "r", "namespace": "default"},
			"spec":     decodeYAML(t, goodRoutes[0]),
			"status":   decodeYAML(t, st),
		})
	}
	for _, st := range []string{
		`{addresses: [{type: IPAddress, value: 10.0.0.1}, {value: 10.0.0.2}]}`,
		`{addresses: [{type: Hostname, value: "Not A Hostname!"}]}`,
		`{listeners: [{name: http, attachedRoutes: -1, supportedKinds: [], conditions: []}]}`,
	} {
		objs = append(objs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": "gw", "namespace": "default"},
			"spec":     decodeYAML(t, `{gatewayClassName: gc, listeners: [{name: http, port: 80, protocol: HTTP}]}`),
			"status":   decodeYAML(t, st),
		})
	}
	objs = append(objs, conformanceManifests(t)...)

	ctx := context.Background()
	tree := map[*versionSchema]*celTree{}
	memos := map[*versionSchema]*openAPIMemo{}
	rejected, schemaRejected, checked := 0, 0, 0
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
		info, ok := s.kinds[schema.GroupKind{Group: gv.Group, Kind: u.GetKind()}]
		if !ok || info.schemas == nil || !info.serves(gv.Version) {
			continue
		}
		if err := s.prepare(info, u, nil, false); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		vs := info.schemas[gv.Version]
		openAPIWant := errorStrings(apiextensionsvalidation.ValidateCustomResource(nil, u.Object, vs.validator))
		if memos[vs] == nil {
			memos[vs] = &openAPIMemo{schema: vs.openAPI.schema, memo: newVerdictMemo[openAPIVerdict](1 << 20)}
		}
		memo := memos[vs]
		for pass := range 2 {
			if got := errorStrings(apiextensionsvalidation.ValidateCustomResource(nil, u.Object, memo)); !slices.Equal(got, openAPIWant) {
				t.Errorf("%s %s pass %d: upstream's schema validator says %q, openAPIMemo says %q", u.GetKind(), u.GetName(), pass, openAPIWant, got)
			}
		}
		if len(openAPIWant) > 0 {
			schemaRejected++
		}
		if vs.cel == nil {
			continue
		}
		if tree[vs] == nil {
			tree[vs] = &celTree{root: splitValidator(vs.cel), memo: newVerdictMemo[celVerdict](1 << 20)}
		}
		upstream, _ := vs.cel.Validate(ctx, nil, vs.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
		want := errorStrings(upstream)
		for pass := range 2 {
			errs, left := tree[vs].validate(ctx, u.Object, celconfig.RuntimeCELCostBudget)
			if got := errorStrings(errs); !slices.Equal(got, want) {
				t.Errorf("%s %s pass %d: upstream says %q, celTree says %q", u.GetKind(), u.GetName(), pass, want, got)
			}
			if left < 0 {
				t.Errorf("%s %s: budget exhausted", u.GetKind(), u.GetName())
			}
		}
		checked++
		if len(want) > 0 {
			rejected++
		}
	}
	if rejected < len(badRoutes) || schemaRejected < len(badSchemaRoutes)+4 || checked < 50 {
		t.Fatalf("checked %d objects, %d rejected by CEL, %d by the schema: want at least 50, and the %d and %d bad routes rejected",
			checked, rejected, schemaRejected, len(badRoutes), len(badSchemaRoutes))
	}
}

// TestCELTreeBudget checks that a verdict taken from the memo is charged
// its cost: an object validated once with the full budget, then with a
// budget too small for its rules, gets upstream's out-of-budget error.
func TestCELTreeBudget(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	info := s.kinds[schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"}]
	vs := info.schemas["v1"]
	tree := &celTree{root: splitValidator(vs.cel), memo: newVerdictMemo[celVerdict](1 << 20)}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "r", "namespace": "default"},
		"spec":     decodeYAML(t, goodRoutes[1]),
	}}
	if err := s.prepare(info, u, nil, false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs, left := tree.validate(ctx, u.Object, celconfig.RuntimeCELCostBudget)
	if len(errs) != 0 {
		t.Fatalf("good route rejected: %v", errs)
	}
	cost := celconfig.RuntimeCELCostBudget - left
	if cost <= 1 {
		t.Fatalf("rules cost %d: want more than 1 to test the budget", cost)
	}
	errs, left = tree.validate(ctx, u.Object, cost-1)
	if left >= 0 || !slices.ContainsFunc(errorStrings(errs), func(e string) bool { return strings.Contains(e, "running out of cost budget") }) {
		t.Fatalf("with budget %d of %d needed: errors %q, %d left; want upstream's out-of-budget error", cost-1, cost, errorStrings(errs), left)
	}
	if errs, left = tree.validate(ctx, u.Object, cost); len(errs) != 0 || left != 0 {
		t.Fatalf("with exactly the budget needed: errors %q, %d left; want none, 0", errorStrings(errs), left)
	}
}

// TestVerdictMemoBounded fills a small memo past its bound, using one
// entry all along, and checks that the memo never holds more than the
// bound, that the entry in use stays and that the others leave.
func TestVerdictMemoBounded(t *testing.T) {
	m := newVerdictMemo[celVerdict](4096)
	n := &celNode{}
	verdict := celVerdict{errs: field.ErrorList{field.Invalid(field.NewPath("spec"), "v", "bad")}, cost: 1}
	m.put(n, "hot", verdict)
	size := func(g map[memoKey]celVerdict) int {
		b := 0
		for k, v := range g {
			b += len(k.content) + 64 + v.size()
		}
		return b
	}
	for i := range 1000 {
		m.put(n, fmt.Sprintf("cold-%d-%s", i, strings.Repeat("x", i%50)), verdict)
		if _, ok := m.get(n, "hot"); !ok {
			t.Fatalf("after %d other entries the entry in use is gone", i+1)
		}
		if b := size(m.cur) + size(m.prev); b > m.maxBytes {
			t.Fatalf("after %d puts the memo holds %d bytes, over its bound %d", i+1, b, m.maxBytes)
		}
	}
	if _, ok := m.get(n, "cold-0-"); ok {
		t.Error("an entry used once is still there after the memo filled many times")
	}
	m.put(n, strings.Repeat("k", 5000), celVerdict{cost: 1})
	if _, ok := m.get(n, strings.Repeat("k", 5000)); ok {
		t.Fatal("a key larger than the bound was kept")
	}
}

func errorStrings(l field.ErrorList) []string {
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

func decodeYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	v, err := copyJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// conformanceManifests returns the Gateway API objects of upstream's
// conformance manifests.
func conformanceManifests(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := fs.WalkDir(conformance.Manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		raw, err := conformance.Manifests.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err == io.EOF {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if api, _ := m["apiVersion"].(string); !strings.Contains(api, "gateway.networking") {
				continue
			}
			v, err := copyJSON(m)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, v.(map[string]any))
		}
	})
	if err != nil {
		t.Fatalf("reading upstream's manifests: %v", err)
	}
	return out
}

// TestVerdictMemoSkip checks that a node whose lookups keep missing is
// validated without the memo, except for one lookup every memoProbe, and
// that a node whose lookups hit is never skipped.
func TestVerdictMemoSkip(t *testing.T) {
	m := newVerdictMemo[celVerdict](1 << 20)
	unique, shared := &celNode{}, &celNode{}
	m.put(shared, "same", celVerdict{cost: 1})
	for i := range memoProbe {
		if m.skip(unique) || m.skip(shared) {
			t.Fatalf("skipped after %d lookups, before memoProbe (%d)", i, memoProbe)
		}
		m.get(unique, fmt.Sprintf("own-%d", i))
		m.get(shared, "same")
	}
	skipped := 0
	for range 10 * memoProbe {
		if m.skip(shared) {
			t.Fatal("a node whose every lookup hit was skipped")
		}
		if m.skip(unique) {
			skipped++
		} else {
			m.get(unique, "probe")
		}
	}
	if skipped == 0 || skipped == 10*memoProbe {
		t.Fatalf("a node whose every lookup missed was skipped %d times of %d: want all but the probes", skipped, 10*memoProbe)
	}
	// Once its content repeats, the probes hit and it is looked up again.
	for range 20 * memoProbe {
		if !m.skip(unique) {
			m.put(unique, "now shared", celVerdict{cost: 1})
			m.get(unique, "now shared")
		}
	}
	if m.skip(unique) {
		t.Error("a node whose probes keep hitting is still skipped")
	}
}

// TestTrimmedSchemasAgree checks that defaulting and the list-type checks
// with the trimmed schemas (versionSchema.defaults and listTypes) give
// what upstream's functions give with the whole schema, on every Gateway
// API object of upstream's conformance manifests and on objects with
// duplicate keys in list maps.
func TestTrimmedSchemasAgree(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs := conformanceManifests(t)
	cond := `{type: Accepted, status: "True", reason: Accepted, message: ok, lastTransitionTime: "2026-01-01T00:00:00Z"}`
	for _, doc := range []string{
		`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: gw, namespace: default},
		  spec: {gatewayClassName: gc, listeners: [{name: http, port: 80, protocol: HTTP}, {name: http, port: 81, protocol: HTTP}]}}`,
		`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: gw, namespace: default},
		  spec: {gatewayClassName: gc, listeners: [{name: http, port: 80, protocol: HTTP}]}, status: {conditions: [` + cond + `, ` + cond + `]}}`,
		`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: r, namespace: default},
		  spec: {parentRefs: [{name: gw}]}, status: {parents: [{parentRef: {name: gw}, controllerName: example.com/c, conditions: [` + cond + `, ` + cond + `]}]}}`,
	} {
		objs = append(objs, decodeYAML(t, doc))
	}
	defaulted, rejected := 0, 0
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
		info, ok := s.kinds[schema.GroupKind{Group: gv.Group, Kind: u.GetKind()}]
		if !ok || info.schemas == nil || !info.serves(gv.Version) {
			continue
		}
		vs := info.schemas[gv.Version]
		whole, trimmed := copyMap(o), copyMap(o)
		structuraldefaulting.Default(whole, vs.structural)
		vs.defaultObject(trimmed)
		if !equality.Semantic.DeepEqual(whole, trimmed) {
			t.Errorf("%s %s: defaulting with the whole schema gives %v, with the trimmed one %v", u.GetKind(), u.GetName(), whole, trimmed)
		}
		if !equality.Semantic.DeepEqual(whole, o) {
			defaulted++
		}
		want := errorStrings(structurallisttype.ValidateListSetsAndMaps(nil, vs.structural, whole))
		if got := errorStrings(vs.listErrors(whole)); !slices.Equal(got, want) {
			t.Errorf("%s %s: list types with the whole schema say %q, with the trimmed one %q", u.GetKind(), u.GetName(), want, got)
		}
		if len(want) > 0 {
			rejected++
		}
	}
	if defaulted < 10 || rejected < 3 {
		t.Fatalf("%d objects were defaulted and %d had list errors: want at least 10 and 3", defaulted, rejected)
	}
}
