package dataplane

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// serveHTTP is the request path of one socket: choose the listener by Host
// (and check it against the TLS SNI), match a route, then run the rule.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request, key portKey) {
	w = s.guardWrites(w) // clientwrite.go: every write to the client is bounded
	if r.TLS == nil {
		r.TLS = tlsState(r) // connguard.go: HTTPS is decrypted below net/http
	}
	if r.ProtoMajor == 1 && framingInDoubt(r) {
		// A chunked HTTP/1.1 request that came with a Content-Length too,
		// or with a Transfer-Encoding repeated or folded: net/http takes
		// all of them as chunked and hides which it saw, so the gateway
		// follows the raw heads (connguard.go). RFC 9112 section 6.1: a
		// server that processes a request with both MUST close the
		// connection after responding (docs/semantics/request-limits.md).
		w.Header().Set("Connection", "close")
	}
	normalizePath(r) // pathnorm.go: routes match, and backends get, the path without dot-segments
	grpcReq := isGRPC(r)
	if !s.checkHeaderCount(w, r, grpcReq) { // limits.go
		return
	}
	pt := s.snap.Load().ports[key]
	if pt == nil {
		notFound(w, grpcReq)
		return
	}
	host := canonicalHost(r.Host)
	l := pt.selectListener(host)
	if r.TLS != nil && r.TLS.ServerName != "" && pt.selectListener(strings.ToLower(r.TLS.ServerName)) != l {
		// The connection was set up for another listener (RFC 9110
		// section 15.5.20): the client must open a new one.
		writeError(w, http.StatusMisdirectedRequest, "the Host does not belong to the listener selected by the TLS server name")
		return
	}
	if l == nil {
		notFound(w, grpcReq)
		return
	}
	if grpcReq {
		if e := l.matchGRPC(host, r); e != nil {
			s.serveGRPC(w, r, e.action) // grpc_proxy.go
			return
		}
		// A hostname served by GRPCRoutes is not also served by
		// HTTPRoutes (the controller rejects such conflicts), so a gRPC
		// request that matches none of them is unimplemented.
		if l.grpcClaims(host) {
			notFound(w, true)
			return
		}
	}
	e := l.matchHTTP(host, r)
	if e == nil {
		notFound(w, grpcReq)
		return
	}
	s.runRule(w, r, l, e.action, matchedPath{prefix: e.path, ok: e.pathKind != pathRegex})
}

// proxyRequest is one client request on its way to a backend, as the
// matched rule left it: its filters applied and its backend chosen. It
// carries what every step after that needs (an attempt, a retry decision,
// the answer to the client), as net/http's handlers get one *Request
// rather than a parameter per detail.
type proxyRequest struct {
	w http.ResponseWriter
	// r is the request as the client sent it; its context ends when the
	// client goes away.
	r *http.Request
	// out is the request sent upstream: filters applied, its context
	// bounded by timeouts.request (or, for gRPC, the call's budget).
	out *http.Request
	act *action  // the matched rule
	b   *backend // the backend the rule picked
	// origin is the client's CORS Origin, "" when the rule has no CORS
	// filter; the response gets the rule's CORS headers for it.
	origin string
	// body guards the client's request body (limits.go); nil when no
	// bound applies.
	body *requestBody
	// slot is the request's place among those in flight to b (limits.go).
	slot backendSlot
}

// clientFault says how to answer an exchange that failed with err when
// the client's request body was at fault (see clientFailure). The body's
// own record is asked first: a read deadline that passed also ends the
// request's context (net/http takes the connection for gone), and the
// transport may report that end instead of the read error.
func (pr *proxyRequest) clientFault(err error) (status int, msg string, ok bool) {
	if berr := pr.body.failure(); berr != nil {
		return clientFailure(&clientBodyError{berr})
	}
	if err == nil { // the common case, without errors.As's allocation
		return 0, "", false
	}
	return clientFailure(err)
}

// startMirrors sends a copy of pr.out to each mirror of the rule and of the
// backend (which see the request as filtered). The request body is read
// into memory first when it is small and of known length; otherwise the
// mirrors are skipped.
func (s *Server) startMirrors(pr *proxyRequest) {
	route, be := pr.act.filters.mirrors, pr.b.filters.mirrors
	if len(route) == 0 && len(be) == 0 {
		return
	}
	body, ok := bufferBody(pr.out, maxMirrorBody) // retry.go
	for _, m := range route {
		s.mirror(pr.out, body, ok, m)
	}
	for _, m := range be {
		s.mirror(pr.out, body, ok, m)
	}
}

// matchedPath is the part of the path a PathPrefix (or Exact) match covered,
// used by ReplacePrefixMatch.
type matchedPath struct {
	prefix string
	ok     bool
}

// runRule runs a matched rule: CORS, redirect, backend choice, filters,
// mirrors, then the upstream exchange.
func (s *Server) runRule(w http.ResponseWriter, r *http.Request, l *listenerTable, act *action, mp matchedPath) {
	if act.invalid != "" {
		s.fail(w, act.grpc, http.StatusInternalServerError, grpcInternal, "the matched rule is invalid: "+act.invalid)
		return
	}
	fs := &act.filters
	var origin string
	if fs.cors != nil {
		if isPreflight(r) {
			fs.cors.writePreflight(w, r)
			return
		}
		origin = r.Header.Get("Origin")
	}
	if fs.redirect != nil {
		redirect(w, r, l, fs.redirect, mp)
		return
	}
	b := act.pick()
	if b == nil || b.invalid {
		s.fail(w, act.grpc, http.StatusInternalServerError, grpcInternal, "no valid backend for the matched rule")
		return
	}
	if b.filters.redirect != nil {
		redirect(w, r, l, b.filters.redirect, mp)
		return
	}

	// timeouts.request bounds everything from here to the last byte of the
	// response.
	ctx := r.Context()
	if act.requestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = s.parts.Timer.Bound(ctx, time.Now(), act.requestTimeout, context.DeadlineExceeded) // parts.go
		defer cancel()
	}
	out := upstreamRequest(ctx, r)
	var guard *requestBody
	out.Body, guard = s.guardRequestBody(w, r, out.Body) // limits.go: client timeout, pace, close after a broken body
	defer guard.finish()
	out.Body = markClientErrors(out.Body)
	if r.ProtoMajor == 1 && out.Body != nil {
		// Keep reading the request body while the response streams (HTTP/2
		// does this by design; HTTP/1.1 needs asking).
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	applyRequestFilters(out, fs, mp)
	applyRequestFilters(out, &b.filters, mp)
	pr := &proxyRequest{w: w, r: r, out: out, act: act, b: b, origin: origin, body: guard}
	s.startMirrors(pr)

	// The upstream exchange: attempts, retries and timeouts (retry.go).
	s.exchange(pr)
}

// pick chooses a backend by weight; nil when the rule has no weight at all.
func (a *action) pick() *backend {
	if a.totalWeight <= 0 {
		return nil
	}
	n := rand.Int64N(a.totalWeight)
	for _, b := range a.backends {
		if n < b.weight {
			return b
		}
		n -= b.weight
	}
	return nil
}

// applyRequestFilters applies header modifiers and URL rewrites to the
// upstream request.
func applyRequestFilters(out *http.Request, fs *filterSet, mp matchedPath) {
	for _, f := range fs.requestHeaders {
		applyHeaderFilter(out.Header, f)
	}
	if rw := fs.rewrite; rw != nil {
		if rw.Hostname != nil {
			out.Host = string(*rw.Hostname)
		}
		if rw.Path != nil {
			u := *out.URL
			u.Path = rewritePath(u.Path, rw.Path, mp)
			u.RawPath = ""
			out.URL = &u
		}
	}
}

// redirect answers a RequestRedirect filter.
func redirect(w http.ResponseWriter, r *http.Request, l *listenerTable, rd *gwv1.HTTPRequestRedirectFilter, mp matchedPath) {
	code := http.StatusFound
	if rd.StatusCode != nil {
		code = *rd.StatusCode
	}
	w.Header().Set("Location", redirectLocation(r, l, rd, mp))
	w.WriteHeader(code)
}

// matchHTTP returns the first HTTP match, in precedence order, that accepts
// the request.
func (l *listenerTable) matchHTTP(host string, r *http.Request) *httpEntry {
	var query url.Values // parsed once, on demand
	for _, e := range l.http {
		if !e.host.matches(host) || !e.matchPath(r.URL.Path) {
			continue
		}
		if e.method != "" && e.method != r.Method {
			continue
		}
		if !matchHeaders(e.headers, r) {
			continue
		}
		if len(e.query) > 0 {
			if query == nil {
				query = r.URL.Query()
			}
			if !matchQuery(e.query, query) {
				continue
			}
		}
		return e
	}
	return nil
}

func (e *httpEntry) matchPath(path string) bool {
	switch e.pathKind {
	case pathExact:
		return path == e.path
	case pathPrefix:
		return strings.HasPrefix(path, e.path) && (len(path) == len(e.path) || path[len(e.path)] == '/')
	default:
		return e.pathRe.MatchString(path)
	}
}

func matchHeaders(ms []valueMatch, r *http.Request) bool {
	for _, m := range ms {
		var v string
		if m.name == "Host" {
			v = r.Host
		} else {
			vs, ok := r.Header[m.name]
			if !ok {
				return false
			}
			v = strings.Join(vs, ",")
		}
		if !m.matchValue(v) {
			return false
		}
	}
	return true
}

func matchQuery(ms []valueMatch, q url.Values) bool {
	for _, m := range ms {
		vs, ok := q[m.name]
		if !ok || len(vs) == 0 || !m.matchValue(vs[0]) {
			return false
		}
	}
	return true
}

// matchGRPC returns the first gRPC match, in precedence order, that accepts
// the request (path "/package.Service/Method").
func (l *listenerTable) matchGRPC(host string, r *http.Request) *grpcEntry {
	service, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok || strings.Contains(method, "/") {
		return nil
	}
	for _, e := range l.grpc {
		if e.host.matches(host) && e.service.matches(service) && e.method.matches(method) && matchHeaders(e.headers, r) {
			return e
		}
	}
	return nil
}

// grpcClaims reports whether a GRPCRoute on the listener serves host.
func (l *listenerTable) grpcClaims(host string) bool {
	for _, e := range l.grpc {
		if e.host.matches(host) {
			return true
		}
	}
	return false
}

// isGRPC reports whether r is a gRPC request (content-type application/grpc
// or application/grpc+codec).
func isGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/grpc") {
		return false
	}
	rest := ct[len("application/grpc"):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

// canonicalHost lower-cases host and strips the port and a trailing dot.
func canonicalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(hostWithoutPort(host)), ".")
}

// hostWithoutPort strips an optional port (and IPv6 brackets) from a Host.
func hostWithoutPort(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// canonicalHeader is http.CanonicalHeaderKey; a named function keeps the
// compile step readable.
func canonicalHeader(name string) string { return http.CanonicalHeaderKey(name) }

// gRPC status codes the data plane answers with.
const (
	grpcDeadlineExceeded = 4
	grpcInternal         = 13
	grpcUnimplemented    = 12
	grpcUnavailable      = 14
)

// notFound answers a request no route matched: 404, or UNIMPLEMENTED for
// gRPC as the GRPCRoute spec requires.
func notFound(w http.ResponseWriter, grpc bool) {
	if grpc {
		writeGRPCStatus(w, grpcUnimplemented, "no route matched the method")
		return
	}
	writeError(w, http.StatusNotFound, "no route matched the request")
}

// fail answers an error as an HTTP status, or as a gRPC status for gRPC
// rules.
func (s *Server) fail(w http.ResponseWriter, grpc bool, status, grpcCode int, msg string) {
	s.log.V(1).Info("request failed", "status", status, "reason", msg)
	if grpc {
		writeGRPCStatus(w, grpcCode, msg)
		return
	}
	writeError(w, status, msg)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// writeGRPCStatus answers a trailers-only gRPC response.
func writeGRPCStatus(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(code))
	h.Set("Grpc-Message", url.PathEscape(msg))
	w.WriteHeader(http.StatusOK)
}

// clientBodyError is an error reading the request body from the client: its
// framing is broken (a bad chunk), it ended before its Content-Length, or
// the client stopped sending in time. An upstream exchange that fails with
// it failed by the client's fault, and is answered as such (clientFailure),
// not with 502.
type clientBodyError struct{ err error }

func (e *clientBodyError) Error() string {
	return "reading the request body from the client: " + e.err.Error()
}
func (e *clientBodyError) Unwrap() error { return e.err }

// markClientErrors wraps a request body so that its read errors, other
// than its end, are clientBodyErrors, which the upstream transport returns
// as they are.
func markClientErrors(body io.ReadCloser) io.ReadCloser {
	if body == nil || body == http.NoBody {
		return body
	}
	return clientErrBody{body}
}

type clientErrBody struct{ io.ReadCloser }

func (b clientErrBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &clientBodyError{err}
	}
	return n, err
}

// clientFailure says how to answer an upstream exchange that failed with
// err because of the client's request body: 408 when the client did not
// send it in time, else 400. ok is false when the body was not at fault.
func clientFailure(err error) (status int, msg string, ok bool) {
	var cbe *clientBodyError
	if !errors.As(err, &cbe) {
		return 0, "", false
	}
	if slow := (*slowBodyError)(nil); errors.As(cbe.err, &slow) {
		return http.StatusRequestTimeout, slow.Error(), true
	}
	if errors.Is(cbe.err, os.ErrDeadlineExceeded) {
		return http.StatusRequestTimeout, "the client did not send the request body in time", true
	}
	return http.StatusBadRequest, "the request body is malformed or incomplete: " + cbe.err.Error(), true
}
