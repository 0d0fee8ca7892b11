package store

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// celTree runs the CEL rules of one CRD version on a new object (a
// create: no old object, so no transition rules and no ratcheting) and
// remembers the verdict on each subtree of the object by its content.
//
// A rule sees only the value it is declared on (self) and what is below
// it, so the errors the rules under a node produce are a function of the
// node's value and its path: ten thousand HTTPRoutes whose rules and
// parentRefs are alike are validated once, not ten thousand times. The
// walk is the one the apiextensions-apiserver's cel.Validator makes (the
// node's own rules, then its allOf validators, then additionalProperties
// and properties of a map, or the items of a list, in that order), each
// node's own rules evaluated by a copy of that node's cel.Validator with
// its children removed, so every rule is compiled, evaluated and reported
// by the upstream code. What is remembered is the result of that code:
// the errors and the CEL cost they took, which is charged to the object's
// budget again on every reuse. A subtree whose evaluation ran out of
// budget is not remembered, and a remembered one that would not fit in
// what is left of the budget is evaluated again, so an object near the
// budget gets the errors it would get without the memo.
type celTree struct {
	root *celNode
	memo *verdictMemo[celVerdict]
}

// celNode is one node of a cel.Validator tree: own holds the node's rules
// and allOf validators only; the children are celNodes of their own.
type celNode struct {
	own   *cel.Validator
	props map[string]*celNode
	items *celNode
	addl  *celNode
}

// newCELTree splits v (nil when the schema has no rules) into celNodes.
func newCELTree(v *cel.Validator) *celTree {
	if v == nil {
		return nil
	}
	return &celTree{root: splitValidator(v), memo: sharedCELMemo}
}

func splitValidator(v *cel.Validator) *celNode {
	if v == nil {
		return nil
	}
	own := *v // shares the compiled programs
	own.Items, own.Properties, own.AdditionalProperties = nil, nil, nil
	n := &celNode{own: &own, items: splitValidator(v.Items), addl: splitValidator(v.AdditionalProperties)}
	if len(v.Properties) > 0 {
		n.props = make(map[string]*celNode, len(v.Properties))
		for k := range v.Properties {
			p := v.Properties[k]
			n.props[k] = splitValidator(&p)
		}
	}
	return n
}

// validate returns the errors of the rules on obj, a new object, and the
// budget left, as cel.Validator.Validate does with no old object.
func (t *celTree) validate(ctx context.Context, obj map[string]any, budget int64) (field.ErrorList, int64) {
	var key []byte
	return t.walk(ctx, t.root, nil, obj, budget, &key, false)
}

// walk validates obj at n. Below the root (remember true) the verdict is
// looked up, and stored, by n, the path and obj's content; key is a
// buffer reused for the keys.
func (t *celTree) walk(ctx context.Context, n *celNode, path *field.Path, obj any, budget int64, key *[]byte, remember bool) (field.ErrorList, int64) {
	if n == nil || obj == nil || budget < 0 {
		return nil, budget
	}
	var k string
	if remember && !t.memo.skip(n) {
		buf, ok := appendMemoKey((*key)[:0], path, obj)
		*key = buf
		if ok {
			k = string(buf)
			if v, hit := t.memo.get(n, k); hit && v.cost <= budget {
				return copyErrors(v.errs), budget - v.cost
			}
		}
	}
	start := budget
	errs, budget := n.own.Validate(ctx, path, nil, obj, nil, budget)
	if budget >= 0 {
		var more field.ErrorList
		switch obj := obj.(type) {
		case []any:
			for i, e := range obj {
				more, budget = t.walk(ctx, n.items, path.Index(i), e, budget, key, true)
				errs = append(errs, more...)
				if budget < 0 {
					break
				}
			}
		case map[string]any:
			if n.addl != nil {
				for name, e := range obj {
					more, budget = t.walk(ctx, n.addl, path.Key(name), e, budget, key, true)
					errs = append(errs, more...)
					if budget < 0 {
						return errs, budget
					}
				}
			}
			if n.props != nil {
				for name, e := range obj {
					p, ok := n.props[name]
					if !ok {
						continue
					}
					more, budget = t.walk(ctx, p, path.Child(name), e, budget, key, true)
					errs = append(errs, more...)
					if budget < 0 {
						return errs, budget
					}
				}
			}
		}
	}
	if k != "" && budget >= 0 {
		t.memo.put(n, k, celVerdict{errs: copyErrors(errs), cost: start - budget})
	}
	return errs, budget
}

// appendMemoKey appends to b the path and a type-exact encoding of v
// (an int64 and a float64 of the same value differ, as they do to CEL),
// with map keys sorted. It reports false for a value that holds a type a
// stored object should not hold, which is then not remembered.
func appendMemoKey(b []byte, path *field.Path, v any) ([]byte, bool) {
	b = append(b, path.String()...)
	b = append(b, '=')
	return appendValue(b, v)
}

func appendValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		if v {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case string:
		return strconv.AppendQuote(append(b, 's'), v), true
	case int64:
		return strconv.AppendInt(append(b, 'i'), v, 10), true
	case float64:
		if math.IsNaN(v) {
			return b, false
		}
		return strconv.AppendFloat(append(b, 'd'), v, 'g', -1, 64), true
	case []any:
		b = append(b, '[')
		for _, e := range v {
			var ok bool
			if b, ok = appendValue(b, e); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, ']'), true
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names)
		b = append(b, '{')
		for _, name := range names {
			b = strconv.AppendQuote(b, name)
			b = append(b, ':')
			var ok bool
			if b, ok = appendValue(b, v[name]); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, '}'), true
	default:
		return b, false
	}
}

// memoMaxBytes bounds what each of the process's memos holds (keys and
// verdicts); when one would exceed it, it starts empty again.
const memoMaxBytes = 16 << 20

// sharedCELMemo is the memo of every celTree: its keys name the node, so
// the trees of all CRDs can share one bound.
var sharedCELMemo = newVerdictMemo[celVerdict](memoMaxBytes)

type celVerdict struct {
	errs field.ErrorList
	cost int64
}

func (v celVerdict) size() int {
	n := 0
	for _, e := range v.errs {
		n += len(e.Field) + len(e.Detail) + 64
	}
	return n
}

// verdictMemo remembers verdicts of validators by node and content,
// bounded by bytes. It keeps two generations: when the current one is full
// it becomes the previous one and a new one starts, and a verdict found in
// the previous one moves to the current one. So the verdicts that keep
// being used (the parts objects share) stay, and those of content seen
// once (each object's own parts) leave after two generations. It is safe
// for concurrent use.
type verdictMemo[V interface{ size() int }] struct {
	mu       sync.Mutex
	maxBytes int // of both generations together
	bytes    int // of cur
	cur      map[memoKey]V
	prev     map[memoKey]V
	stats    map[any]*nodeStats // by node; see skip
}

// nodeStats counts the recent lookups of one node and how many hit.
type nodeStats struct{ lookups, hits, skipped int }

// Tuning of skip: a node is looked up at least memoProbe times before it
// may be skipped, it is skipped while fewer than one lookup in
// memoMinHitRate hits, and every memoProbe-th skip looks up anyway. The
// counts are halved every memoWindow lookups, so they follow what the
// node sees lately.
const (
	memoProbe      = 64
	memoMinHitRate = 8
	memoWindow     = 1024
)

// skip reports whether to validate at node without the memo. A node whose
// lookups have mostly missed (content of each object's own, such as its
// metadata, or an HTTPRoute's spec that holds its own hostnames) is
// validated directly: the key of its content would cost about what a
// miss costs, and the entry would not be used again. Below it, the nodes
// are looked up as before. Skipping changes no verdict, only whether it
// is looked up; every memoProbe-th skip looks up anyway, so a node whose
// content starts repeating is remembered again.
func (m *verdictMemo[V]) skip(node any) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stats[node]
	if st == nil || st.lookups < memoProbe || st.hits*memoMinHitRate >= st.lookups {
		return false
	}
	st.skipped++
	return st.skipped%memoProbe != 0
}

// countLocked records a lookup of node.
func (m *verdictMemo[V]) countLocked(node any, hit bool) {
	st := m.stats[node]
	if st == nil {
		if m.stats == nil {
			m.stats = map[any]*nodeStats{}
		}
		st = &nodeStats{}
		m.stats[node] = st
	}
	st.lookups++
	if hit {
		st.hits++
	}
	if st.lookups >= memoWindow {
		st.lookups, st.hits = st.lookups/2, st.hits/2
	}
}

// memoKey names a node of a validator (a pointer the validator keeps for
// its life) and the content validated there.
type memoKey struct {
	node    any
	content string
}

func newVerdictMemo[V interface{ size() int }](maxBytes int) *verdictMemo[V] {
	return &verdictMemo[V]{maxBytes: maxBytes, cur: map[memoKey]V{}}
}

func (m *verdictMemo[V]) get(node any, content string) (V, bool) {
	k := memoKey{node, content}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.cur[k]; ok {
		m.countLocked(node, true)
		return v, true
	}
	v, ok := m.prev[k]
	if ok {
		delete(m.prev, k)
		m.addLocked(k, v)
	}
	m.countLocked(node, ok)
	return v, ok
}

func (m *verdictMemo[V]) put(node any, content string, v V) {
	k := memoKey{node, content}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.cur[k]; !ok {
		m.addLocked(k, v)
	}
}

// addLocked adds k to the current generation, starting a new one first
// if it is full.
func (m *verdictMemo[V]) addLocked(k memoKey, v V) {
	size := len(k.content) + 64 + v.size()
	if size > m.maxBytes/2 {
		return
	}
	if m.bytes+size > m.maxBytes/2 {
		m.prev, m.cur, m.bytes = m.cur, map[memoKey]V{}, 0
	}
	m.cur[k] = v
	m.bytes += size
}

// copyErrors copies the errors of l, so that neither the memo nor a
// caller sees changes the other makes.
func copyErrors(l field.ErrorList) field.ErrorList {
	if len(l) == 0 {
		return nil
	}
	out := make(field.ErrorList, len(l))
	for i, e := range l {
		c := *e
		out[i] = &c
	}
	return out
}

// openAPIMemo validates new objects with a CRD version's OpenAPI schema,
// as the apiextensions-apiserver's schema validator does for a create
// (kube-openapi's validate.SchemaValidator), and remembers the result of
// each object or list below the root by its path and content: kube-openapi
// lets a caller supply the validators of properties and items, and those
// it is given here look the result up before validating, and store it
// after. A result depends only on the schema, the path and the value, so
// the errors are the ones validating afresh would give.
type openAPIMemo struct {
	schema *spec.Schema
	memo   *verdictMemo[openAPIVerdict]

	// validators holds the SchemaValidators of the nodes below the root
	// validated so far, by node and path (a validatorKey), and root the
	// root's: building one costs eight sub-validators, and the same nodes
	// are validated at the same paths in every object of a kind. A
	// SchemaValidator is not changed by validating (only SetPath changes
	// it, which nothing here calls), so one serves concurrent writes.
	validators sync.Map
	root       atomic.Pointer[validate.SchemaValidator] // for the root, at path ""
}

// maxValidators bounds the SchemaValidators all openAPIMemos keep
// together (a node in lists has one per index path, and one validator with
// its schema copy takes a kilobyte or two): beyond it they are built
// afresh. Upstream's conformance manifests, every kind, need about 1,400.
const maxValidators = 1 << 14

// validatorsKept counts the SchemaValidators kept by all openAPIMemos.
var validatorsKept atomic.Int64

// validatorKey names a SchemaValidator: the node's validatorIdentity and
// the path of the value. The root, the formats and the options of every
// validator an openAPIMemo builds are the same (its schema, strfmt.Default
// and its option).
type validatorKey struct {
	node any
	path string
}

// schemaValidator returns a SchemaValidator for schema at path, one built
// before for the same node and path if there is one.
func (m *openAPIMemo) schemaValidator(schema *spec.Schema, root any, path string, formats strfmt.Registry) *validate.SchemaValidator {
	node := validatorIdentity(schema)
	if node == nil || formats != strfmt.Default || root != any(m.schema) {
		return validate.NewSchemaValidator(schema, root, path, formats, m.option)
	}
	k := validatorKey{node, path}
	if v, ok := m.validators.Load(k); ok {
		return v.(*validate.SchemaValidator)
	}
	v := validate.NewSchemaValidator(schema, root, path, formats, m.option)
	if validatorsKept.Load() < maxValidators {
		if _, loaded := m.validators.LoadOrStore(k, v); !loaded {
			validatorsKept.Add(1)
		}
	}
	return v
}

// sharedOpenAPIMemo is the memo of every openAPIMemo.
var sharedOpenAPIMemo = newVerdictMemo[openAPIVerdict](memoMaxBytes)

type openAPIVerdict struct{ result *validate.Result }

func (v openAPIVerdict) size() int {
	n := 0
	for _, e := range v.result.Errors {
		n += len(e.Error()) + 64
	}
	return n
}

// Validate validates obj, a new object. It implements
// apiextensionsvalidation.SchemaCreateValidator.
func (m *openAPIMemo) Validate(obj any, _ ...apiextensionsvalidation.ValidationOption) *validate.Result {
	v := m.root.Load()
	if v == nil {
		v = validate.NewSchemaValidator(m.schema, nil, "", strfmt.Default, m.option)
		m.root.Store(v)
	}
	return v.Validate(obj)
}

// option makes a SchemaValidator validate properties and items with
// memoValueValidators.
func (m *openAPIMemo) option(o *validate.SchemaValidatorOptions) {
	o.NewValidatorForField = func(_ string, schema *spec.Schema, root any, path string, formats strfmt.Registry, _ ...validate.Option) validate.ValueValidator {
		return &memoValueValidator{m: m, schema: schema, root: root, path: path, formats: formats}
	}
	o.NewValidatorForIndex = func(_ int, schema *spec.Schema, root any, path string, formats strfmt.Registry, _ ...validate.Option) validate.ValueValidator {
		return &memoValueValidator{m: m, schema: schema, root: root, path: path, formats: formats}
	}
}

// memoValueValidator validates a value below the root of an object.
type memoValueValidator struct {
	m       *openAPIMemo
	schema  *spec.Schema
	root    any
	path    string
	formats strfmt.Registry
}

func (v *memoValueValidator) SetPath(path string) { v.path = path }

func (v *memoValueValidator) Applies(source any, _ reflect.Kind) bool {
	_, ok := source.(*spec.Schema)
	return ok
}

func (v *memoValueValidator) Validate(data any) *validate.Result {
	validator := func() *validate.Result {
		return v.m.schemaValidator(v.schema, v.root, v.path, v.formats).Validate(data)
	}
	node := schemaIdentity(v.schema)
	if node == nil {
		return validator()
	}
	switch data.(type) {
	case map[string]any, []any:
	default:
		return validator() // a scalar: its key would cost about what validating it does
	}
	if v.m.memo.skip(node) {
		return validator()
	}
	key, ok := appendValue(append([]byte(v.path), '='), data)
	if !ok {
		return validator()
	}
	k := string(key)
	if got, hit := v.m.memo.get(node, k); hit {
		return copyResult(got.result)
	}
	r := validator()
	v.m.memo.put(node, k, openAPIVerdict{result: copyResult(r)})
	return r
}

// schemaIdentity returns what names s for as long as the schema it was
// compiled from lives: kube-openapi hands sub-validators copies of the
// schemas of properties, which share their Properties map and their Items
// with the schema in the tree. Schemas with neither (scalars) return nil.
func schemaIdentity(s *spec.Schema) any {
	switch {
	case s == nil:
		return nil
	case s.Properties != nil:
		return reflect.ValueOf(s.Properties).UnsafePointer()
	case s.Items != nil:
		return s.Items
	}
	return nil
}

// validatorIdentity is schemaIdentity, and for a scalar the first element
// of its type list: the apiextensions-apiserver converts each node of a
// CRD's schema with a type list of its own, which the copies kube-openapi
// hands to sub-validators share. A schema with neither returns nil.
func validatorIdentity(s *spec.Schema) any {
	if id := schemaIdentity(s); id != nil {
		return id
	}
	if s != nil && len(s.Type) > 0 {
		return &s.Type[0]
	}
	return nil
}

func copyResult(r *validate.Result) *validate.Result {
	if r == nil {
		return nil
	}
	return &validate.Result{Errors: slices.Clone(r.Errors), Warnings: slices.Clone(r.Warnings), MatchCount: r.MatchCount}
}
