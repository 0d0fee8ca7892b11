package store

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	memo *celMemo
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
	if remember {
		buf, ok := appendMemoKey((*key)[:0], path, obj)
		*key = buf
		if ok {
			k = string(buf)
			if errs, cost, hit := t.memo.get(n, k); hit && cost <= budget {
				return errs, budget - cost
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
		t.memo.put(n, k, errs, start-budget)
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

// celMemoMaxBytes bounds what the process's celMemo holds (keys and
// errors); when it would exceed it, the memo starts empty again.
const celMemoMaxBytes = 32 << 20

// sharedCELMemo is the memo of every celTree: its keys name the node, so
// the trees of all CRDs can share one bound.
var sharedCELMemo = newCELMemo(celMemoMaxBytes)

// celMemo holds the verdicts of a celTree, bounded by the bytes of its
// keys. It is safe for concurrent use.
type celMemo struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	verdicts map[memoKey]celVerdict
}

type memoKey struct {
	node    *celNode
	content string
}

type celVerdict struct {
	errs field.ErrorList
	cost int64
}

func newCELMemo(maxBytes int) *celMemo {
	return &celMemo{maxBytes: maxBytes, verdicts: map[memoKey]celVerdict{}}
}

// get returns a copy of the errors remembered for n and key, and their
// cost.
func (m *celMemo) get(n *celNode, key string) (field.ErrorList, int64, bool) {
	m.mu.Lock()
	v, ok := m.verdicts[memoKey{n, key}]
	m.mu.Unlock()
	if !ok {
		return nil, 0, false
	}
	return copyErrors(v.errs), v.cost, true
}

func (m *celMemo) put(n *celNode, key string, errs field.ErrorList, cost int64) {
	size := len(key) + 64
	for _, e := range errs {
		size += len(e.Field) + len(e.Detail) + 64
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.maxBytes {
		return
	}
	if _, ok := m.verdicts[memoKey{n, key}]; ok {
		return
	}
	if m.bytes+size > m.maxBytes {
		clear(m.verdicts)
		m.bytes = 0
	}
	m.verdicts[memoKey{n, key}] = celVerdict{errs: copyErrors(errs), cost: cost}
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
