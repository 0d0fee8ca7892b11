// Compiling route matches: path, header, query and method matches for
// HTTPRoute, service/method and header matches for GRPCRoute, with the
// regular expressions bounded and anchored.

package dataplane

import (
	"fmt"
	"regexp"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// stringMatch matches a string exactly or by a regular expression; the zero
// value matches anything.
type stringMatch struct {
	value string
	re    *regexp.Regexp
}

func (m stringMatch) matches(s string) bool {
	if m.re != nil {
		return m.re.MatchString(s)
	}
	return m.value == "" || m.value == s
}

// valueMatch matches one header or query parameter by name.
type valueMatch struct {
	name string // canonical header key, or the query parameter name as given
	stringMatch
}

func (m stringMatch) len() int {
	if m.re != nil {
		return len(m.re.String())
	}
	return len(m.value)
}

func compileHTTPMatch(m *gwv1.HTTPRouteMatch) (*httpEntry, error) {
	e := &httpEntry{pathKind: pathPrefix, pathLen: 1}
	if m.Path != nil {
		typ := gwv1.PathMatchPathPrefix
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		value := "/"
		if m.Path.Value != nil {
			value = *m.Path.Value
		}
		e.pathLen = len(value)
		switch typ {
		case gwv1.PathMatchExact:
			if !strings.HasPrefix(value, "/") {
				return nil, fmt.Errorf("path: Exact value %q must start with \"/\"", value)
			}
			e.pathKind, e.path = pathExact, value
		case gwv1.PathMatchPathPrefix:
			if !strings.HasPrefix(value, "/") {
				return nil, fmt.Errorf("path: PathPrefix value %q must start with \"/\"", value)
			}
			e.pathKind, e.path = pathPrefix, strings.TrimRight(value, "/")
		case gwv1.PathMatchRegularExpression:
			re, err := compileFullRegexp(value)
			if err != nil {
				return nil, fmt.Errorf("path: %w", err)
			}
			e.pathKind, e.pathRe = pathRegex, re
		default:
			return nil, fmt.Errorf("path: type %q is not supported; accepted types are Exact, PathPrefix and RegularExpression", typ)
		}
	}
	if m.Method != nil {
		e.method = string(*m.Method)
	}
	for i, h := range m.Headers {
		vm, err := compileValueMatch(fmt.Sprintf("headers[%d]", i), canonicalHeader(string(h.Name)), h.Value, (*string)(h.Type))
		if err != nil {
			return nil, err
		}
		e.headers = append(e.headers, vm)
	}
	for i, q := range m.QueryParams {
		vm, err := compileValueMatch(fmt.Sprintf("queryParams[%d]", i), string(q.Name), q.Value, (*string)(q.Type))
		if err != nil {
			return nil, err
		}
		e.query = append(e.query, vm)
	}
	return e, nil
}

func compileGRPCMatch(m *gwv1.GRPCRouteMatch) (*grpcEntry, error) {
	e := &grpcEntry{}
	if m.Method != nil {
		regex := m.Method.Type != nil && *m.Method.Type == gwv1.GRPCMethodMatchRegularExpression
		if m.Method.Type != nil && !regex && *m.Method.Type != gwv1.GRPCMethodMatchExact {
			return nil, fmt.Errorf("method: type %q is not supported; accepted types are Exact and RegularExpression", *m.Method.Type)
		}
		var err error
		if m.Method.Service != nil && *m.Method.Service != "" {
			if e.service, err = newStringMatch(*m.Method.Service, regex); err != nil {
				return nil, fmt.Errorf("method.service: %w", err)
			}
		}
		if m.Method.Method != nil && *m.Method.Method != "" {
			if e.method, err = newStringMatch(*m.Method.Method, regex); err != nil {
				return nil, fmt.Errorf("method.method: %w", err)
			}
		}
	}
	for i, h := range m.Headers {
		vm, err := compileValueMatch(fmt.Sprintf("headers[%d]", i), canonicalHeader(string(h.Name)), h.Value, (*string)(h.Type))
		if err != nil {
			return nil, err
		}
		e.headers = append(e.headers, vm)
	}
	return e, nil
}

// maxRegexpLen bounds the size of a regular expression in a match.
const maxRegexpLen = 1024

// compileFullRegexp compiles an RE2 expression that must match a whole value.
func compileFullRegexp(expr string) (*regexp.Regexp, error) {
	if len(expr) > maxRegexpLen {
		return nil, fmt.Errorf("regular expression is %d bytes; the limit is %d", len(expr), maxRegexpLen)
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, fmt.Errorf("regular expression %q is not valid RE2 syntax: %w", expr, err)
	}
	return re, nil
}

func newStringMatch(value string, regex bool) (stringMatch, error) {
	if !regex {
		return stringMatch{value: value}, nil
	}
	re, err := compileFullRegexp(value)
	return stringMatch{re: re}, err
}

// compileValueMatch compiles the header or query parameter match that
// field names ("headers[0]"): name must hold value, exactly or by the
// regular expression, as typ says (nil means Exact). The HTTP and gRPC
// match types share their values, Exact and RegularExpression.
func compileValueMatch(field, name, value string, typ *string) (valueMatch, error) {
	regex := typ != nil && *typ == string(gwv1.HeaderMatchRegularExpression)
	if typ != nil && !regex && *typ != string(gwv1.HeaderMatchExact) {
		return valueMatch{}, fmt.Errorf("%s: type %q is not supported; accepted types are Exact and RegularExpression", field, *typ)
	}
	vm, err := newValueMatch(name, value, regex)
	if err != nil {
		return valueMatch{}, fmt.Errorf("%s: %w", field, err)
	}
	return vm, nil
}

func newValueMatch(name, value string, regex bool) (valueMatch, error) {
	sm, err := newStringMatch(value, regex)
	return valueMatch{name: name, stringMatch: sm}, err
}

// matchValue reports whether a present value matches; unlike
// stringMatch.matches, an empty Exact value only matches an empty value.
func (m valueMatch) matchValue(v string) bool {
	if m.re != nil {
		return m.re.MatchString(v)
	}
	return m.value == v
}
