package tests

// Helpers shared by the HTTPRoute retry and timeout tests (GEP-1731,
// GEP-1742): a client that talks to the echo-backend through a Gateway,
// sends a fault spec and a request id, times the whole exchange, and reads
// the backend's ledger back through the same Gateway.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	gwhttp "sigs.k8s.io/gateway-api/conformance/utils/http"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
)

// infraNamespace is the namespace of the upstream base manifests, where
// gatewitness's HTTPRoute tests put their routes and backends.
const infraNamespace = "gateway-conformance-infra"

// sharedGateway is the upstream base Gateway the HTTPRoute tests attach
// to: one HTTP listener on port 80 for routes of its own namespace. Each
// test's routes have a hostname of their own, so parallel tests never
// share a path (the ledger path /_gatewitness/ above all).
var sharedGateway = types.NamespacedName{Namespace: infraNamespace, Name: "same-namespace"}

// ledgerLag is how much earlier than the gateway an event may look when
// the backend records it: the echo-backend writes an attempt's end (or
// notices a cancellation) a moment after the gateway could act on it, a
// moment that grows on a loaded machine. Gaps measured from the ledger are
// checked against the configured duration minus ledgerLag: a twentieth of
// the timing tolerance (50ms to 100ms), far below every duration the tests
// configure, so a gateway that ignores a backoff still fails.
func ledgerLag() time.Duration { return TimingTolerance() / 20 }

// arrivalLag is how much later than the gateway's start of an attempt the
// backend may record the attempt's arrival: the connection's setup and the
// request's transfer. A duration the backend measures from an arrival may
// look that much shorter than the gateway's: a quarter of the timing
// tolerance (250ms to 500ms).
func arrivalLag() time.Duration { return TimingTolerance() / 4 }

// Bounds on what the helpers read, so a misbehaving gateway cannot make a
// test hold unbounded memory.
const (
	maxResponseBody = 1 << 20
	maxLedgerBody   = 4 << 20
)

// routeClient sends requests to one hostname of a Gateway with a client of
// its own (the suite's RoundTripper neither returns bodies nor reads
// ledgers), dialing as the suite does (DialContext).
type routeClient struct {
	t      *testing.T
	gwAddr string // "host:port" of the Gateway listener
	host   string // Host header: the route's hostname
	client *http.Client
	// echoSetHeader, when set, goes with every request as
	// X-Echo-Set-Header: the echo-backend adds it to its answers.
	echoSetHeader string
}

// newRouteClient returns a routeClient for host on the Gateway at gwAddr.
// Its connections are closed when t ends.
func newRouteClient(t *testing.T, s *suite.ConformanceTestSuite, gwAddr, host string) *routeClient {
	// One connection per request: Go's transport resends a GET by itself
	// when a reused connection closes before any response byte, and such
	// a resend would reach the backend as an attempt the gateway never
	// made (a gateway may close the connection to abort a response).
	tr := &http.Transport{DialContext: DialContext(s), DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &routeClient{t: t, gwAddr: gwAddr, host: host, client: &http.Client{Transport: tr}}
}

// attachRoutes waits until the routes named in infraNamespace are accepted
// by the shared Gateway and have resolved references, then until path on
// host answers 200 from the Deployment backend consistently (the data plane
// is programmed and the backend is ready). It returns the Gateway's
// address.
func attachRoutes(t *testing.T, s *suite.ConformanceTestSuite, host, path, backend string, routes ...string) string {
	t.Helper()
	return attachRoutesTo(t, s, sharedGateway, host, path, backend, routes...)
}

// attachRoutesTo is attachRoutes for the Gateway gw rather than the shared
// one.
func attachRoutesTo(t *testing.T, s *suite.ConformanceTestSuite, gw types.NamespacedName, host, path, backend string, routes ...string) string {
	t.Helper()
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: infraNamespace, Name: r}
	}
	gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(gw), nns...)
	for _, nn := range nns {
		kubernetes.HTTPRouteMustHaveResolvedRefsConditionsTrue(t, s.Client, s.TimeoutConfig, nn, gw)
	}
	awaitFirstOK(t, s, gwAddr, host, path)
	gwhttp.MakeRequestAndExpectEventuallyConsistentResponse(t, s.RoundTripper, s.TimeoutConfig, gwAddr, gwhttp.ExpectedResponse{
		Request:   gwhttp.Request{Host: host, Path: path},
		Response:  gwhttp.Response{StatusCode: http.StatusOK},
		Backend:   backend,
		Namespace: infraNamespace,
	})
	return gwAddr
}

// awaitFirstOK polls path on host through the Gateway at gwAddr, at the
// suite's status poll interval but no more often than every 50ms (each
// poll is a request through the data plane to a backend), until it
// answers 200 or the consistency timeout passes; the consistency check
// that follows it judges. That
// check waits a whole second after a miss, and a route is often accepted
// a few milliseconds before the data plane serves it (404) or its
// backend's pod is ready (503): without this, such a test would wait that
// second each time.
func awaitFirstOK(t *testing.T, s *suite.ConformanceTestSuite, gwAddr, host, path string) {
	t.Helper()
	exp := gwhttp.ExpectedResponse{Request: gwhttp.Request{Host: host, Path: path}}
	req := gwhttp.MakeRequest(t, &exp, gwAddr, "HTTP", "http")
	interval := max(s.TimeoutConfig.DefaultPollInterval, 50*time.Millisecond)
	deadline := time.Now().Add(s.TimeoutConfig.MaxTimeToConsistency)
	for {
		_, res, err := s.RoundTripper.CaptureRoundTrip(req)
		if err == nil && res.StatusCode == http.StatusOK || time.Now().After(deadline) {
			return
		}
		time.Sleep(interval) // polling interval, not synchronisation
	}
}

// echoSetHeaderName is echo-basic's request header that makes the backend
// add the headers it lists ("Name:value,...") to its answer.
const echoSetHeaderName = "X-Echo-Set-Header"

// attachRoutesQuietly is attachRoutes for a test that must control every
// connection the gateway opens to its backend: the consistency check goes
// through the test's own client, whose requests ask the backend to answer
// "Connection: close", so the check leaves the gateway no idle connection
// to that backend. It waits for the suite's RequiredConsecutiveSuccesses
// answers in a row from a pod of backend.
func attachRoutesQuietly(t *testing.T, s *suite.ConformanceTestSuite, host, path, backend string, routes ...string) string {
	t.Helper()
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: infraNamespace, Name: r}
	}
	gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(sharedGateway), nns...)
	for _, nn := range nns {
		kubernetes.HTTPRouteMustHaveResolvedRefsConditionsTrue(t, s.Client, s.TimeoutConfig, nn, sharedGateway)
	}
	c := newRouteClient(t, s, gwAddr, host)
	c.echoSetHeader = closeEveryConnection
	need := max(s.TimeoutConfig.RequiredConsecutiveSuccesses, 1)
	deadline := time.Now().Add(s.TimeoutConfig.MaxTimeToConsistency)
	for ok := 0; ok < need; {
		x := c.do(httpRequest{Path: path, Limit: 5 * time.Second})
		var echo struct {
			Pod string `json:"pod"`
		}
		if x.Err == nil && x.Status == http.StatusOK && json.Unmarshal(x.Body, &echo) == nil && strings.HasPrefix(echo.Pod, backend) {
			ok++
			continue
		}
		ok = 0
		if time.Now().After(deadline) {
			t.Fatalf("%s%s through the Gateway %s: no %d answers in a row from a pod of %s within %v; last: %v (pod %q)",
				host, path, gwAddr, need, backend, s.TimeoutConfig.MaxTimeToConsistency, x, echo.Pod)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
	}
	return gwAddr
}

// httpRequestSeq numbers the request ids of this process.
var httpRequestSeq atomic.Uint64

// newHTTPRequestID returns a request id unique to this request: the test's
// name (made safe for a URL path), a counter and random bits.
func newHTTPRequestID(t *testing.T) string {
	name := []byte(t.Name())
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			name[i] = '.'
		}
	}
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s.%d.%s", name, httpRequestSeq.Add(1), hex.EncodeToString(r[:]))
}

// httpExchange is what one request through the Gateway came to.
type httpExchange struct {
	ID string // the request id the backend's ledger knows it by
	// Status is the response status, 0 when no response headers came.
	Status int
	// Err is the error of the round trip (no response headers), nil when
	// headers came.
	Err error
	// Body is what was read of the response body; BodyErr the error that
	// ended the read early (nil when the body was complete).
	Body    []byte
	BodyErr error
	// Headers is when the response headers came, Elapsed when the exchange
	// ended (body complete or failed, or the round trip failed), both from
	// the moment the request was sent.
	Headers, Elapsed time.Duration
}

// String describes the exchange for failure messages.
func (e httpExchange) String() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("request %s: no response after %v: %v", e.ID, e.Elapsed.Round(time.Millisecond), e.Err)
	case e.BodyErr != nil:
		return fmt.Sprintf("request %s: status %d after %v, body cut after %d bytes at %v: %v",
			e.ID, e.Status, e.Headers.Round(time.Millisecond), len(e.Body), e.Elapsed.Round(time.Millisecond), e.BodyErr)
	}
	return fmt.Sprintf("request %s: status %d after %v, %d body bytes", e.ID, e.Status, e.Elapsed.Round(time.Millisecond), len(e.Body))
}

// request describes one request a test sends.
type httpRequest struct {
	Method string // default GET
	Path   string
	Fault  string // the X-Gatewitness-Fault spec; empty for none
	Body   []byte // sent with its Content-Length when not nil
	// BodyParts, when more than 1, sends Body in that many parts after
	// the headers, each BodyGap after the one before (the first BodyGap
	// after the headers): the gateway has the headers, and must wait
	// for the rest, before the body is whole.
	BodyParts int
	BodyGap   time.Duration
	// Limit bounds the whole exchange on the client's side, so that a
	// gateway that never answers fails the test instead of hanging it.
	// Default: 10s.
	Limit time.Duration
}

// do sends req with a fresh request id and reads the whole response.
func (c *routeClient) do(req httpRequest) httpExchange {
	c.t.Helper()
	x := httpExchange{ID: newHTTPRequestID(c.t)}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	if req.Limit <= 0 {
		req.Limit = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), req.Limit)
	defer cancel()
	var body io.Reader
	switch {
	case req.Body != nil && req.BodyParts > 1:
		body = &gappedBody{ctx: ctx, rest: req.Body, parts: req.BodyParts, gap: req.BodyGap}
	case req.Body != nil:
		body = strings.NewReader(string(req.Body))
	}
	u := url.URL{Scheme: "http", Host: c.gwAddr, Path: req.Path}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), body)
	if err != nil {
		c.t.Fatalf("building the request %s %s: %v", req.Method, req.Path, err)
	}
	if req.Body != nil {
		// A reader of its own makes the transport flush the headers
		// before it reads the body (net/http's FlushHeaders).
		hr.ContentLength = int64(len(req.Body))
	}
	hr.Host = c.host
	hr.Header.Set(echowire.IDHeader, x.ID)
	if c.echoSetHeader != "" {
		hr.Header.Set(echoSetHeaderName, c.echoSetHeader)
	}
	if req.Fault != "" {
		hr.Header.Set(echowire.FaultHeader, req.Fault)
	}
	start := time.Now()
	resp, err := c.client.Do(hr)
	if err != nil {
		x.Err, x.Elapsed = err, time.Since(start)
		return x
	}
	defer resp.Body.Close()
	x.Status, x.Headers = resp.StatusCode, time.Since(start)
	x.Body, x.BodyErr = io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	x.Elapsed = time.Since(start)
	return x
}

// ledgerEntry reads the ledger of id from the backend behind the route's
// /_gatewitness/ path. ok is false when the backend has no attempt of id.
func (c *routeClient) ledgerEntry(id string) (e echowire.Entry, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := url.URL{Scheme: "http", Host: c.gwAddr, Path: echowire.LedgerPath + id}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return e, false, fmt.Errorf("building the ledger request: %w", err)
	}
	hr.Host = c.host
	resp, err := c.client.Do(hr)
	if err != nil {
		return e, false, fmt.Errorf("reading the ledger of %s: %w", id, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxLedgerBody))
	if err != nil {
		return e, false, fmt.Errorf("reading the ledger of %s: %w", id, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return e, false, nil
	default:
		return e, false, fmt.Errorf("reading the ledger of %s: status %d: %.200s", id, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, false, fmt.Errorf("decoding the ledger of %s: %w", id, err)
	}
	return e, true, nil
}

// settledLedger polls the ledger of id until every attempt recorded has
// ended, and returns it. The backend records an attempt's end a moment
// after the gateway sees it, so the ledger read right after a response may
// still show the last attempt in flight. It fails t if the ledger does not
// settle within 5s plus the timing tolerance.
func (c *routeClient) settledLedger(id string) echowire.Entry {
	c.t.Helper()
	deadline := time.Now().Add(5*time.Second + TimingTolerance())
	for {
		e, ok, err := c.ledgerEntry(id)
		switch {
		case err != nil:
			// The route to the ledger is the test's own; an error here
			// is not what the test checks, but it may be transient.
		case !ok:
			return e // nothing recorded: nothing to settle
		case ledgerSettled(e):
			return e
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the ledger of %s did not settle in time: %+v (last error: %v)", id, e, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// settled reports whether every attempt of e has ended.
func ledgerSettled(e echowire.Entry) bool {
	for _, a := range e.Attempts {
		if a.Outcome == echowire.InFlight || a.Ended == nil {
			return false
		}
	}
	return true
}

// attemptSummary describes the attempts of e for failure messages and
// observations: "1:503/answered 2:200/answered". Recorded, it also keeps
// the attempts as a table (see ledgerSummary.ObservationTable).
func attemptSummary(e echowire.Entry) ledgerSummary { return ledgerSummary(e) }

// ledgerSummary is a ledger entry as tests show it: one line of text, or a
// table of its attempts.
type ledgerSummary echowire.Entry

// String is "1:503/answered 2:200/answered": each attempt's number, the
// status the backend sent and how the attempt ended.
func (e ledgerSummary) String() string {
	var b strings.Builder
	for i, a := range e.Attempts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d/%s", a.Number, a.Status, a.Outcome)
	}
	if e.Dropped > 0 {
		fmt.Fprintf(&b, " (+%d dropped)", e.Dropped)
	}
	return b.String()
}

// ObservationTable is a row per attempt, by the backend's clock: when it
// arrived, sent its headers, was cancelled and ended, in milliseconds from
// the first attempt's arrival; the gap since the attempt before it ended;
// the status sent and how it ended.
func (e ledgerSummary) ObservationTable() observe.Table {
	t := observe.Table{Columns: []string{"attempt", "arrived", "headers sent", "cancelled", "ended", "gap", "status", "outcome", "connection"}}
	if len(e.Attempts) == 0 {
		return t
	}
	start := e.Attempts[0].Arrived
	at := func(ts *time.Time) string {
		if ts == nil {
			return ""
		}
		return fmt.Sprintf("+%dms", ts.Sub(start).Milliseconds())
	}
	for i, a := range e.Attempts {
		gap := ""
		if i > 0 && e.Attempts[i-1].Ended != nil {
			gap = fmt.Sprintf("%dms", a.Arrived.Sub(*e.Attempts[i-1].Ended).Milliseconds())
		}
		status := ""
		if a.Status != 0 {
			status = fmt.Sprint(a.Status)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(a.Number), at(&a.Arrived), at(a.HeadersSent), at(a.CancelledAt), at(a.Ended),
			gap, status, string(a.Outcome), a.Conn})
	}
	if e.Dropped > 0 {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("+%d dropped", e.Dropped)})
	}
	return t
}

// gaps returns, for each attempt after the first, the time from the end of
// the attempt before it to its arrival, by the backend's clock. An attempt
// whose predecessor has no end time gets an error.
func attemptGaps(e echowire.Entry) ([]time.Duration, error) {
	var out []time.Duration
	for i := 1; i < len(e.Attempts); i++ {
		prev := e.Attempts[i-1]
		if prev.Ended == nil {
			return nil, fmt.Errorf("attempt %d has no end time (outcome %s)", prev.Number, prev.Outcome)
		}
		out = append(out, e.Attempts[i].Arrived.Sub(*prev.Ended))
	}
	return out, nil
}

// isTimeoutStatus reports whether status is a timeout error the GEP-1742
// text allows for an expired timeout: 504 Gateway Timeout, or 408 Request
// Timeout, which some implementations send.
func isTimeoutStatus(status int) bool {
	return status == http.StatusGatewayTimeout || status == http.StatusRequestTimeout
}

// within reports whether d lies in [want-early, want+late].
func inWindow(d, want, early, late time.Duration) bool {
	return d >= want-early && d <= want+late
}

// gappedBody is a request body sent in parts, each gap after the one
// before, the first gap after the headers (see httpRequest.BodyParts).
type gappedBody struct {
	ctx   context.Context
	rest  []byte
	parts int // parts still to send
	gap   time.Duration
	part  []byte // what is left of the part being sent
}

func (b *gappedBody) Read(p []byte) (int, error) {
	if len(b.part) == 0 {
		if len(b.rest) == 0 {
			return 0, io.EOF
		}
		// The gap is the scenario (the body's tail arrives late), not
		// a wait for something to happen.
		timer := time.NewTimer(b.gap)
		select {
		case <-timer.C:
		case <-b.ctx.Done():
			timer.Stop()
			return 0, b.ctx.Err()
		}
		size := (len(b.rest) + b.parts - 1) / b.parts
		b.part, b.rest = b.rest[:size], b.rest[size:]
		b.parts--
	}
	n := copy(p, b.part)
	b.part = b.part[n:]
	return n, nil
}
