package tests

// Helpers of the fault-fidelity tests (GATEWITNESS-FAULT-FIDELITY): the
// Gateway listeners a test's HTTPRoute is reached through (HTTP/1.1 and h2c
// on the shared HTTP listener, TLS on the shared HTTPS listener), clients
// for each, and an exchange that records when each body byte arrived.
// docs/semantics/fault-fidelity.md says what the tests expect and why.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
)

// httpsGateway is the upstream base Gateway with an HTTPS listener
// ("https", no hostname, the suite's self-signed certificate) that the
// fault-fidelity routes also attach to.
var httpsGateway = types.NamespacedName{Namespace: infraNamespace, Name: "same-namespace-with-https-listener"}

// The ways a fault-fidelity test reaches the Gateway.
const (
	viaH1  = "h1"  // HTTP/1.1 on the HTTP listener
	viaH2C = "h2c" // HTTP/2 with prior knowledge on the HTTP listener
	viaTLS = "tls" // TLS on the HTTPS listener, h2 or http/1.1 as ALPN chooses
)

// ffTarget is the route of one fault-fidelity HTTP test, on both Gateways.
type ffTarget struct {
	s         *suite.ConformanceTestSuite
	name      string // the manifest's route, Services and Deployment
	host      string
	httpAddr  string
	httpsAddr string
	dial      DialFunc
	ledger    *testclient.Route // reads the backend's ledger over the HTTP listener
	// h2c: the HTTP listener answered HTTP/2 with prior knowledge, which
	// Gateway API does not require for HTTPRoutes.
	h2c bool
	// h2Backend: the Gateway supports appProtocol kubernetes.io/h2c, so
	// the /h2c/ rule's backend speaks HTTP/2.
	h2Backend bool
}

// newFFTarget waits until the route name (gatewitness/<name>.yaml) is
// accepted by both Gateways and answers on each, and finds out whether
// the HTTP listener speaks h2c.
func newFFTarget(t *testing.T, s *suite.ConformanceTestSuite, name string) *ffTarget {
	t.Helper()
	host := name + ".gatewitness.test"
	g := &ffTarget{s: s, name: name, host: host, dial: DialContext(s),
		h2Backend: s.SupportedFeatures.Has(gwfeatures.SupportHTTPRouteBackendProtocolH2C)}
	g.httpAddr = attachRoutes(t, s, host, "/ready", name, name)
	route := types.NamespacedName{Namespace: infraNamespace, Name: name}
	g.httpsAddr = kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(httpsGateway, "https"), route)
	g.ledger = newRouteClient(t, s, g.httpAddr, host)
	g.awaitOK(t, viaTLS, true)
	g.h2c = g.awaitOK(t, viaH2C, false)
	observe.Record(t, "h2c-listener", g.h2c)
	return g
}

// awaitOK waits until /ready through via is answered by a pod of the
// route's backend. When must is set it needs servedInARow answers in a
// row, each on a connection of its own (evidence.go), for up to the
// suite's MaxTimeToConsistency, and then fails t; otherwise (the route is
// already served over HTTP/1.1, and via may not be spoken at all) it
// gives up after five tries and reports false.
func (g *ffTarget) awaitOK(t *testing.T, via string, must bool) bool {
	t.Helper()
	c := g.client(t, via, false)
	try := func() answer {
		x := g.get(t, c, via, "/ready", "", nil, 5*time.Second)
		if x.Err == nil && x.BodyErr != nil {
			return answer{what: x.describe()}
		}
		return httpAnswer(x.Exchange, g.name)
	}
	if must {
		start := time.Now()
		first, all, err := awaitInARow(g.s, check{what: fmt.Sprintf("/ready on %s through the Gateway (%s)", g.host, via), try: try}, true, start)
		if err != nil {
			t.Fatal(err)
		}
		observe.Record(t, "consistency", observe.Consistency{Step: "served", Routes: "HTTPRoute " + infraNamespace + "/" + g.name + " (" + via + ")",
			FirstServed: first, Served: all})
		return true
	}
	tries, ok := 0, false
	testclient.Poll(g.s.TimeoutConfig.MaxTimeToConsistency, 100*time.Millisecond, func() bool {
		tries++
		ok = try().served
		return ok || tries >= 5
	})
	return ok
}

// skipUnless skips the running subtest when via or the backend path
// needs what the Gateway does not offer.
func (g *ffTarget) skipUnless(t *testing.T, via, backend string) {
	t.Helper()
	if via == viaH2C && !g.h2c {
		t.Skip("the Gateway's HTTP listener does not answer HTTP/2 with prior knowledge (not required for HTTPRoutes)")
	}
	if backend == "/h2c/" && !g.h2Backend {
		t.Skipf("%s not supported", gwfeatures.SupportHTTPRouteBackendProtocolH2C)
	}
}

// client returns a client for via, closed when t ends. keepAlive keeps
// connections for reuse, one at a time, as a browser's or curl's would be
// reused; otherwise every request has a connection of its own. Neither
// asks for compressed bodies, so the bytes are the backend's.
func (g *ffTarget) client(t *testing.T, via string, keepAlive bool) *http.Client {
	tr := &http.Transport{
		DialContext:        g.dial,
		DisableKeepAlives:  !keepAlive,
		MaxConnsPerHost:    1,
		DisableCompression: true,
		Protocols:          new(http.Protocols),
	}
	switch via {
	case viaH1:
		tr.Protocols.SetHTTP1(true)
	case viaH2C:
		tr.Protocols.SetUnencryptedHTTP2(true)
	case viaTLS:
		// The suite's certificate is self-signed; what is tested is the
		// relay, not the certificate.
		tr.TLSClientConfig = &tls.Config{ServerName: g.host, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
		tr.ForceAttemptHTTP2 = true
	default:
		t.Fatalf("unknown way to the Gateway %q", via)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// arrival is how much of a body had arrived, and when: from the moment
// the request was written, so that setting up the connection (a TLS
// handshake on a busy machine) does not count against the Gateway.
type arrival struct {
	Bytes int
	At    time.Duration
}

// ffExchange is one request through the Gateway and what came back.
type ffExchange struct {
	testclient.Exchange
	Proto    string      // the response's protocol, "HTTP/2.0" ...
	Header   http.Header // the response headers
	CL       int64       // the response's Content-Length, -1 if none
	Chunked  bool        // HTTP/1.1 chunked framing
	Arrivals []arrival   // every read that returned bytes
	GaveUp   bool        // the test's own bound ended the exchange
}

// get sends GET path through via with a fresh request id, the fault spec
// (none if empty) and the extra headers, and reads the response as it
// comes, for at most limit.
func (g *ffTarget) get(t *testing.T, c *http.Client, via, path, fault string, header http.Header, limit time.Duration) ffExchange {
	t.Helper()
	x := ffExchange{Exchange: testclient.Exchange{ID: testclient.NewID(t)}, CL: -1}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	u := url.URL{Scheme: "http", Host: g.httpAddr, Path: path}
	if via == viaTLS {
		u.Scheme, u.Host = "https", g.httpsAddr
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatalf("building GET %s: %v", path, err)
	}
	req.Host = g.host
	for k, vv := range header {
		req.Header[k] = vv
	}
	req.Header.Set(echowire.IDHeader, x.ID)
	if fault != "" {
		req.Header.Set(echowire.FaultHeader, fault)
	}
	start := time.Now()
	var wrote atomic.Int64 // when the request was written, in Unix nanoseconds
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.CompareAndSwap(0, time.Now().UnixNano()) },
	}))
	resp, err := c.Do(req)
	if err != nil {
		x.Err, x.Elapsed, x.GaveUp = err, time.Since(start), ctx.Err() != nil
		return x
	}
	defer resp.Body.Close()
	x.Status, x.Headers, x.Proto, x.Header = resp.StatusCode, time.Since(start), resp.Proto, resp.Header
	x.CL, x.Chunked = resp.ContentLength, len(resp.TransferEncoding) > 0
	sent := start
	if ns := wrote.Load(); ns != 0 {
		sent = time.Unix(0, ns)
	}
	buf := make([]byte, 32<<10)
	for len(x.Body) < testclient.MaxResponseBody {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			x.Body = append(x.Body, buf[:n]...)
			x.Arrivals = append(x.Arrivals, arrival{len(x.Body), time.Since(sent)})
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			x.BodyErr = err
			break
		}
	}
	x.Elapsed, x.GaveUp = time.Since(start), ctx.Err() != nil
	return x
}

// arrivedAt returns when the body's first n bytes had all arrived, and
// false if they never did.
func (x ffExchange) arrivedAt(n int) (time.Duration, bool) {
	for _, a := range x.Arrivals {
		if a.Bytes >= n {
			return a.At, true
		}
	}
	return 0, false
}

// describe is the exchange for failure messages: the status, the framing,
// the body and how it ended.
func (x ffExchange) describe() string {
	if x.Err != nil {
		return x.Exchange.String()
	}
	framing := "close-delimited"
	switch {
	case x.CL >= 0:
		framing = fmt.Sprintf("Content-Length %d", x.CL)
	case x.Chunked:
		framing = "chunked"
	case strings.HasPrefix(x.Proto, "HTTP/2"):
		framing = "DATA frames"
	}
	end := "ended cleanly"
	if x.BodyErr != nil {
		end = "ended by " + x.BodyErr.Error()
	}
	return fmt.Sprintf("request %s: %s %d, %s, %d body bytes, %s after %v",
		x.ID, x.Proto, x.Status, framing, len(x.Body), end, x.Elapsed.Round(time.Millisecond))
}

// record records what the client saw.
func (x ffExchange) record(t *testing.T) {
	t.Helper()
	observe.Record(t, "exchange", x.describe())
}

// singleAttempt fails t unless the backend's ledger of x shows exactly one
// attempt (the routes have no retries), and records the ledger.
func (g *ffTarget) singleAttempt(t *testing.T, x ffExchange) {
	t.Helper()
	c := g.ledger
	e := c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "ledger", testclient.Summary(e))
	if len(e.Attempts) != 1 {
		t.Errorf("the backend saw %s (%d attempts) of %s; want exactly 1: the route has no retries", testclient.Summary(e), len(e.Attempts), x.ID)
	}
}

// ffFaults are the backend failures after the response started: a
// Content-Length body cut in its middle, the same failing right after its
// headers, and a streamed body (no length) cut in its middle.
var ffFaults = []struct{ name, spec string }{
	{"mid-body", "reset=mid-body"},
	{"after-headers", "reset=after-headers"},
	{"streamed-mid-body", "chunks=2;reset=mid-body"},
}

// ffBackends are the route's backend paths: the echo-backend's HTTP/1.1
// port, and its h2c port.
var ffBackends = []string{"/h1/", "/h2c/"}

// truncationVisible fails t when x looks like a complete answer of the
// backend: its 200 with a body read cleanly to its end. Anything else is
// a failure the client can see: no response, a body cut short (fewer
// bytes than the Content-Length, no last-chunk, a reset stream), or an
// error status of the gateway's own. A Gateway that neither ends nor
// closes the response fails as well, when the test gives up.
func truncationVisible(t *testing.T, x ffExchange) {
	t.Helper()
	x.record(t)
	switch {
	case x.GaveUp:
		t.Errorf("%s: the Gateway neither ended nor closed the response before the test gave up; want the failure passed on", x.describe())
	case x.Err == nil && x.BodyErr == nil && x.Status == http.StatusOK:
		t.Errorf("%s: the backend failed mid-response, and the client got what looks like its complete answer; "+
			"want an incomplete response (HTTP/1.1: fewer bytes than the Content-Length, or no last-chunk, then a close; HTTP/2: RST_STREAM, never END_STREAM)",
			x.describe())
	}
}

// ffGiveUp bounds an exchange whose backend fails at once: a Gateway
// passes the failure on within milliseconds; one that holds the response
// open this long never will.
func ffGiveUp() time.Duration { return 5*time.Second + 2*TimingTolerance() }
