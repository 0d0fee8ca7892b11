package testclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
)

// Bounds on what a Route reads, so a misbehaving gateway cannot make a
// test hold unbounded memory.
const (
	MaxResponseBody = 1 << 20
	maxLedgerBody   = 4 << 20
	maxAdminBody    = 4 << 10
)

// DialFunc dials a network address, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Route sends requests to one hostname of a Gateway with a client of its
// own (the suite's RoundTripper neither returns bodies nor reads ledgers).
// It holds no *testing.T: each call takes the test it fails.
type Route struct {
	addr   string // "host:port" of the Gateway listener
	host   string // Host header: the route's hostname
	client *http.Client
	// EchoSetHeader, when set, goes with every request as
	// echowire.EchoSetHeader: the echo-backend adds it to its answers
	// (such as "Connection:close").
	EchoSetHeader string
}

// NewRoute returns a Route for host on the Gateway listener at addr,
// dialing with dial. Its connections are closed when t ends.
func NewRoute(t testing.TB, dial DialFunc, addr, host string) *Route {
	// One connection per request: Go's transport resends a GET by itself
	// when a reused connection closes before any response byte, and such
	// a resend would reach the backend as an attempt the gateway never
	// made (a gateway may close the connection to abort a response).
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &Route{addr: addr, host: host, client: &http.Client{Transport: tr}}
}

// Addr is the Gateway listener's "host:port"; Host the route's hostname.
func (c *Route) Addr() string { return c.addr }

// Host is the hostname the Route's requests carry.
func (c *Route) Host() string { return c.host }

// Request describes one request a test sends.
type Request struct {
	Method string // default GET
	Path   string
	Fault  string // the echowire.FaultHeader spec; empty for none
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

// Exchange is what one request through the Gateway came to.
type Exchange struct {
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
func (e Exchange) String() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("request %s: no response after %v: %v", e.ID, e.Elapsed.Round(time.Millisecond), e.Err)
	case e.BodyErr != nil:
		return fmt.Sprintf("request %s: status %d after %v, body cut after %d bytes at %v: %v",
			e.ID, e.Status, e.Headers.Round(time.Millisecond), len(e.Body), e.Elapsed.Round(time.Millisecond), e.BodyErr)
	}
	return fmt.Sprintf("request %s: status %d after %v, %d body bytes", e.ID, e.Status, e.Elapsed.Round(time.Millisecond), len(e.Body))
}

// Do sends req with a fresh request id (NewID(t)) and reads the whole
// response. A request that cannot be built fails t.
func (c *Route) Do(t testing.TB, req Request) Exchange {
	t.Helper()
	x := Exchange{ID: NewID(t)}
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
	u := url.URL{Scheme: "http", Host: c.addr, Path: req.Path}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), body)
	if err != nil {
		t.Fatalf("building the request %s %s: %v", req.Method, req.Path, err)
	}
	if req.Body != nil {
		// A reader of its own makes the transport flush the headers
		// before it reads the body (net/http's FlushHeaders).
		hr.ContentLength = int64(len(req.Body))
	}
	hr.Host = c.host
	hr.Header.Set(echowire.IDHeader, x.ID)
	if c.EchoSetHeader != "" {
		hr.Header.Set(echowire.EchoSetHeader, c.EchoSetHeader)
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
	x.Body, x.BodyErr = io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	x.Elapsed = time.Since(start)
	return x
}

// Ledger reads the ledger of id from the backend behind the route
// (echowire.LedgerPath). ok is false when the backend has no attempt of
// id.
func (c *Route) Ledger(id string) (e echowire.Entry, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := url.URL{Scheme: "http", Host: c.addr, Path: echowire.LedgerPath + id}
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

// SettledLedger polls the ledger of id until every attempt recorded has
// ended, and returns it. The backend records an attempt's end a moment
// after the gateway sees it, so the ledger read right after a response
// may still show the last attempt in flight. It fails t if the ledger does
// not settle within. Every request a test reads the ledger of is one its
// route sends to the backend, so a ledger with no attempt of id is an
// error of its own, reported before the caller's: the request was not yet
// served by the route (NotReached); the empty entry is returned.
func (c *Route) SettledLedger(t testing.TB, id string, within time.Duration) echowire.Entry {
	t.Helper()
	var e echowire.Entry
	var err error
	found := false
	settled := Poll(within, 20*time.Millisecond, func() bool {
		var ok bool
		e, ok, err = c.Ledger(id)
		found = ok
		// An error is not what the test checks (the route to the ledger
		// is the test's own), but it may be transient: poll on.
		return err == nil && (!ok || Settled(e))
	})
	if !settled {
		t.Fatalf("the ledger of %s did not settle within %v: %v (last error: %v)", id, within, Summary(e), err)
	}
	if !found {
		t.Errorf("%s", NotReached(id))
	}
	return e
}

// NotReached is the failure of a request id whose ledger the route's
// backend does not have: the request never reached a pod of it, so
// whatever answered it (the data plane itself, a replica still on an
// older configuration, another route's backend) was not the behaviour
// under test.
func NotReached(id string) string {
	return fmt.Sprintf("not yet served: the route's backend has no attempt of request %s: the request never reached a pod of it "+
		"(answered by the data plane itself, by a replica on an older configuration, or by another route's backend)", id)
}

// Admin POSTs to one of the backend's admin paths (echowire.AdminHealthPath,
// ...) with query through the Gateway, wants 200, and returns the switches
// as the backend answers them after the change.
func (c *Route) Admin(path string, query url.Values) (echowire.AdminState, error) {
	var st echowire.AdminState
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := url.URL{Scheme: "http", Host: c.addr, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return st, fmt.Errorf("POST %s: %w", u.RequestURI(), err)
	}
	req.Host = c.host
	resp, err := c.client.Do(req)
	if err != nil {
		return st, fmt.Errorf("POST %s: %w", u.RequestURI(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAdminBody))
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("POST %s: status %d: %s", u.RequestURI(), resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("POST %s: the answer is not the backend's state: %w: %.200s", u.RequestURI(), err, body)
	}
	return st, nil
}

// gappedBody is a request body sent in parts, each gap after the one
// before, the first gap after the headers (see Request.BodyParts).
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

// Client is the Route's HTTP client, for a test that builds its own
// requests (a load run): it dials the Gateway as the Route does, one
// connection per request.
func (c *Route) Client() *http.Client { return c.client }
