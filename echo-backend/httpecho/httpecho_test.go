package httpecho_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/websocket"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// tolerance is the slack allowed over a configured time on a loaded machine.
const tolerance = 2 * time.Second

// TestUpstreamRoundTripper sends requests with upstream's own round tripper
// (the one the conformance suite uses) over every protocol it knows.
func TestUpstreamRoundTripper(t *testing.T) {
	e := newEnv(t)
	rt := &roundtripper.DefaultRoundTripper{TimeoutConfig: config.DefaultTimeoutConfig()}
	for _, tc := range []struct {
		protocol, base, proto string
		tls                   bool
	}{
		{"", e.httpURL, "HTTP/1.1", false},
		{roundtripper.H2CPriorKnowledgeProtocol, e.h2cURL, "HTTP/2.0", false},
		{roundtripper.HTTPSProtocol, e.httpsURL, "HTTP/1.1", true},
		{roundtripper.H2Protocol, e.httpsURL, "HTTP/2.0", true},
	} {
		t.Run(tc.proto+"-"+tc.protocol, func(t *testing.T) {
			u, _ := url.Parse(tc.base + "/some//path?q=1")
			req := roundtripper.Request{T: t, URL: *u, Host: "example.com", Protocol: tc.protocol, Method: "GET",
				Headers: map[string][]string{"X-Echo-Set-Header": {"X-Foo: bar, X-Foo: baz"}, "X-Custom": {"v"}}}
			if tc.tls {
				req.ServerName, req.ServerCertificate = serverName, e.certPEM
			}
			cReq, cResp, err := rt.CaptureRoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if cResp.StatusCode != 200 || cResp.Protocol != tc.proto {
				t.Errorf("response %d %s, want 200 %s", cResp.StatusCode, cResp.Protocol, tc.proto)
			}
			if got := cResp.Headers["X-Foo"]; len(got) != 1 || got[0] != "bar,baz" {
				t.Errorf("X-Echo-Set-Header: response X-Foo = %q, want [bar,baz]", got)
			}
			if cReq.Path != "/some//path?q=1" || cReq.Host != "example.com" || cReq.Method != "GET" ||
				cReq.Protocol != tc.proto || cReq.Namespace != testPod.Namespace || cReq.Pod != testPod.Pod ||
				cReq.HTTPPort != "3000" {
				t.Errorf("captured request %+v", cReq)
			}
			if got := cReq.Headers["X-Custom"]; len(got) != 1 || got[0] != "v" {
				t.Errorf("echoed X-Custom = %q", got)
			}
			for k := range cReq.Headers {
				if strings.HasPrefix(strings.ToLower(k), "gatewitness-") {
					t.Errorf("helper header %s echoed", k)
				}
			}
			if tc.tls && (cReq.TLS.ServerName != serverName || !strings.HasPrefix(cReq.TLS.Version, "TLSv1.")) {
				t.Errorf("captured TLS %+v", cReq.TLS)
			}
			if tc.tls && tc.proto == "HTTP/2.0" && cReq.TLS.NegotiatedProtocol != "h2" {
				t.Errorf("negotiated %q, want h2", cReq.TLS.NegotiatedProtocol)
			}
		})
	}
}

func TestH2CPortRequiresHTTP2(t *testing.T) {
	e := newEnv(t)
	resp, body := mustDo(t, viaHTTP.client(e), "GET", e.h2cURL+"/", "", "")
	if resp.StatusCode != 400 || string(body) != "Expected h2c request" {
		t.Errorf("HTTP/1.1 on the h2c port: %d %q, want 400 Expected h2c request", resp.StatusCode, body)
	}
}

func TestFailThenSucceedLedger(t *testing.T) {
	e := newEnv(t)
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			c, id := tr.client(e), newID(t)
			payload := strings.Repeat("payload ", 100)
			var statuses []int
			for range 3 {
				resp, b, err := do(t, c, "POST", tr.base(e)+"/echo", id, "fail=2;status=503", strings.NewReader(payload))
				if err != nil {
					t.Fatal(err)
				}
				statuses = append(statuses, resp.StatusCode)
				if resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
				}
				if ec := echoOf(t, b); ec.RequestID != id || ec.Attempt != len(statuses) {
					t.Errorf("echo requestId %q attempt %d, want %q %d", ec.RequestID, ec.Attempt, id, len(statuses))
				}
			}
			if want := []int{503, 503, 200}; !equalInts(statuses, want) {
				t.Errorf("statuses %v, want %v", statuses, want)
			}

			ent := waitEntry(t, e.ledger, id, 3)
			sum := sha256.Sum256([]byte(payload))
			var prev time.Time
			for i, a := range ent.Attempts {
				if a.Number != i+1 || a.Outcome != ledger.Answered || a.Listener != tr.listener || a.Protocol != tr.proto ||
					a.Method != "POST" || a.Path != "/echo" || a.BodyBytes != int64(len(payload)) ||
					a.BodySHA256 != hex.EncodeToString(sum[:]) || !strings.HasPrefix(a.Conn, "c") || a.ConnRequest < 1 {
					t.Errorf("attempt %d: %+v", i+1, a)
				}
				if wantStatus := []int{503, 503, 200}[i]; a.Status != wantStatus {
					t.Errorf("attempt %d status %d, want %d", i+1, a.Status, wantStatus)
				}
				if wantFault := []string{"status=503", "status=503", ""}[i]; a.Fault != wantFault {
					t.Errorf("attempt %d fault %q, want %q", i+1, a.Fault, wantFault)
				}
				if tr.h2() != (a.Stream != 0) {
					t.Errorf("attempt %d stream %d on %s", i+1, a.Stream, tr.proto)
				}
				if a.Arrived.Before(prev) || a.HeadersSent == nil || a.HeadersSent.Before(a.Arrived) || a.Ended.Before(*a.HeadersSent) {
					t.Errorf("attempt %d times out of order: %+v", i+1, a)
				}
				if _, ok := a.Headers["X-Gatewitness-Fault"]; !ok {
					t.Errorf("attempt %d headers lack X-Gatewitness-Fault: %v", i+1, a.Headers)
				}
				for k := range a.Headers {
					if strings.HasPrefix(strings.ToLower(k), "gatewitness-") {
						t.Errorf("helper header %s recorded", k)
					}
				}
				prev = a.Arrived
			}
			if tr.h2() && ent.Attempts[1].ConnRequest <= ent.Attempts[0].ConnRequest {
				t.Errorf("HTTP/2 requests on one connection: connRequest %d then %d", ent.Attempts[0].ConnRequest, ent.Attempts[1].ConnRequest)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDelays(t *testing.T) {
	e := newEnv(t)
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.client(e)
			const d = 300 * time.Millisecond

			// Header and query forms, and echo-basic's ?delay=.
			for _, form := range []string{"header", "query", "legacy"} {
				id := newID(t)
				u, spec := tr.base(e)+"/d", "delay=300ms"
				switch form {
				case "query":
					u, spec = u+"?gatewitness-fault=delay%3D300ms&gatewitness-id="+id, ""
				case "legacy":
					u, spec = u+"?delay=300ms", ""
				}
				reqID := id
				if form == "query" {
					reqID = ""
				}
				begin := time.Now()
				resp, _ := mustDo(t, c, "GET", u, reqID, spec)
				el := time.Since(begin)
				if resp.StatusCode != 200 || el < d || el > d+tolerance {
					t.Errorf("%s: %d after %v, want 200 after %v..%v", form, resp.StatusCode, el, d, d+tolerance)
				}
				if form == "legacy" {
					continue
				}
				a := waitEntry(t, e.ledger, id, 1).Attempts[0]
				if gap := a.HeadersSent.Sub(a.Arrived); gap < d || gap > d+tolerance {
					t.Errorf("%s: ledger headers after %v, want %v..%v", form, gap, d, d+tolerance)
				}
			}

			// body-delay: headers come at once, the body after the delay.
			req, _ := http.NewRequest("GET", tr.base(e)+"/bd", nil)
			req.Header.Set("X-Gatewitness-Fault", "body-delay=400ms")
			begin := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			headersAt := time.Since(begin)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodyAt := time.Since(begin)
			if err != nil || bodyAt-headersAt < 400*time.Millisecond-50*time.Millisecond || bodyAt > 400*time.Millisecond+tolerance {
				t.Errorf("body-delay: headers at %v, body at %v (%v)", headersAt, bodyAt, err)
			}
			echoOf(t, b)
		})
	}
}

func TestChunksAndTrailers(t *testing.T) {
	e := newEnv(t)
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", tr.base(e)+"/c", nil)
			req.Header.Set("X-Gatewitness-Fault", "chunks=4;interval=150ms;trailer=x-info:done")
			begin := time.Now()
			resp, err := tr.client(e).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			first := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatal(err)
			}
			firstAt := time.Since(begin)
			rest, err := io.ReadAll(resp.Body)
			lastAt := time.Since(begin)
			if err != nil {
				t.Fatal(err)
			}
			// Three intervals separate the first chunk from the last.
			if lastAt-firstAt < 3*150*time.Millisecond-50*time.Millisecond || lastAt > 450*time.Millisecond+tolerance {
				t.Errorf("first byte at %v, last at %v; want them about 450ms apart", firstAt, lastAt)
			}
			echoOf(t, append(first, rest...))
			if got := resp.Trailer.Get("X-Info"); got != "done" {
				t.Errorf("trailer X-Info = %q, want done (trailers %v)", got, resp.Trailer)
			}
		})
	}
}

// The client gives up during the delay, once the backend has the request
// (a client deadline could run out before the request arrives on a loaded
// machine); the backend records the cancel, at the time the client gave up.
func TestCancelDuringDelayIsRecorded(t *testing.T) {
	e := newEnv(t)
	for _, tr := range []transport{viaHTTP, viaH2C, viaTLSH2} {
		t.Run(tr.name, func(t *testing.T) {
			id := newID(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", tr.base(e)+"/slow", nil)
			req.Header.Set("X-Gatewitness-Id", id)
			req.Header.Set("X-Gatewitness-Fault", "delay=30s")
			answered := make(chan error, 1)
			go func() {
				resp, err := tr.client(e).Do(req)
				if err == nil {
					resp.Body.Close()
				}
				answered <- err
			}()
			waitArrived(t, e.ledger, id, 1)
			cancelled := time.Now()
			cancel()
			if err := <-answered; err == nil {
				t.Fatal("request answered, want the client to give up")
			}
			a := waitEntry(t, e.ledger, id, 1).Attempts[0]
			if a.Outcome != ledger.Cancelled || a.CancelledAt == nil || a.HeadersSent != nil {
				t.Fatalf("attempt %+v, want cancelled before headers", a)
			}
			if gap := a.CancelledAt.Sub(cancelled); gap < 0 || gap > tolerance {
				t.Errorf("cancel recorded %v after the client gave up, want from 0 to %v", gap, tolerance)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	c := viaHTTP.client(e)
	for _, tc := range []struct {
		url, spec string
		code      int
		want      string
	}{
		{"/x", "delay=soon", 400, `"delay"`},
		{"/x", "frobnicate=1", 400, "frobnicate"},
		// A 1xx is not an answer: the client would see it, then 200.
		{"/x", "status=103", 400, "from 200 to 599"},
		{"/x", "script=100", 400, "from 200 to 599"},
		{"/x?delay=soon", "", 400, "delay"},
		{"/x?delay=-1s", "", 400, "delay"},
		{"/status/abc", "", 400, "/status/NNN"},
		{"/status/999", "", 400, "/status/NNN"},
		{"/retry?succeedAfter=1", "", 400, "uuid"},
		{"/retry?uuid=u", "", 400, "succeedAfter"},
		{"/retry?uuid=u&succeedAfter=1&responseCode=abc", "", 400, "responseCode"},
		{"/retry?uuid=u&succeedAfter=1&delayRetry=x", "", 400, "delayRetry"},
	} {
		id := newID(t)
		resp, b := mustDo(t, c, "GET", e.httpURL+tc.url, id, tc.spec)
		var m struct{ Message string }
		json.Unmarshal(b, &m)
		if resp.StatusCode != tc.code || !strings.Contains(m.Message, tc.want) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s fault %q: %d %q, want %d with a message naming %s", tc.url, tc.spec, resp.StatusCode, b, tc.code, tc.want)
		}
		if tc.spec != "" {
			if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != ledger.Rejected || a.Status != 400 {
				t.Errorf("bad spec recorded as %+v", a)
			}
		}
	}
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t)
	id := newID(t)
	big := bytes.NewReader(make([]byte, httpecho.MaxBodyBytes+1))
	resp, _, err := do(t, viaHTTP.client(e), "POST", e.httpURL+"/up", id, "", big)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 413 {
		t.Errorf("body over the limit: %d, want 413", resp.StatusCode)
	}
	if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != ledger.Rejected || a.BodyBytes != httpecho.MaxBodyBytes {
		t.Errorf("oversized body recorded as %+v", a)
	}
	resp, _, err = do(t, viaHTTP.client(e), "POST", e.httpURL+"/up", "", "", bytes.NewReader(make([]byte, httpecho.MaxBodyBytes)))
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("body at the limit: %v %v, want 200", resp, err)
	}
}

func TestStatusPath(t *testing.T) {
	e := newEnv(t)
	for _, tr := range allTransports {
		resp, b := mustDo(t, tr.client(e), "GET", tr.base(e)+"/status/418", "", "")
		if resp.StatusCode != 418 || len(b) != 0 {
			t.Errorf("%s: /status/418 -> %d %q, want 418 and no body", tr.name, resp.StatusCode, b)
		}
	}
}

func TestResetHTTP1(t *testing.T) {
	e := newEnv(t)
	for _, tr := range h1Transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.client(e)

			id := newID(t)
			if _, _, err := do(t, c, "GET", tr.base(e)+"/r", id, "reset", nil); !isReset(err) {
				t.Errorf("reset before headers: %v, want connection reset", err)
			}
			if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != ledger.Reset || a.HeadersSent != nil {
				t.Errorf("recorded %+v", a)
			}

			for _, point := range []string{"after-headers", "mid-body"} {
				id := newID(t)
				resp, b, err := do(t, c, "GET", tr.base(e)+"/r", id, "reset="+point, nil)
				if resp == nil || resp.StatusCode != 200 {
					t.Fatalf("reset=%s: %v %v, want headers first", point, resp, err)
				}
				if !isReset(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("reset=%s: body error %v, want a reset", point, err)
				}
				if point == "mid-body" && len(b) == 0 || point == "after-headers" && len(b) != 0 {
					t.Errorf("reset=%s: got %d body bytes", point, len(b))
				}
				if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != ledger.Reset || a.HeadersSent == nil {
					t.Errorf("reset=%s recorded %+v", point, a)
				}
			}

			for _, spec := range []string{"close", "goaway"} {
				id := newID(t)
				_, _, err := do(t, c, "GET", tr.base(e)+"/r", id, spec, nil)
				if err == nil || isReset(err) {
					t.Errorf("%s: %v, want the connection closed without a reset", spec, err)
				}
				want := map[string]ledger.Outcome{"close": ledger.Closed, "goaway": ledger.GoAway}[spec]
				if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != want {
					t.Errorf("%s recorded %+v", spec, a)
				}
			}
		})
	}
}

func TestResetHTTP2(t *testing.T) {
	e := newEnv(t)
	for _, tr := range h2Transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.client(e)
			// Warm the connection, so the resets below are on a shared one.
			mustDo(t, c, "GET", tr.base(e)+"/warm", "", "")

			var se http2.StreamError
			id := newID(t)
			_, _, err := do(t, c, "GET", tr.base(e)+"/r", id, "reset;reset-code=CANCEL", nil)
			if !errors.As(err, &se) || se.Code != http2.ErrCodeCancel {
				t.Errorf("reset: %v, want RST_STREAM CANCEL", err)
			}
			if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != ledger.Reset || a.HeadersSent != nil {
				t.Errorf("recorded %+v", a)
			}

			for _, point := range []string{"after-headers", "mid-body"} {
				id := newID(t)
				begin := time.Now()
				resp, b, err := do(t, c, "GET", tr.base(e)+"/r", id, "reset="+point, nil)
				if el := time.Since(begin); el > tolerance {
					t.Errorf("reset=%s took %v, want it at once", point, el)
				}
				if resp == nil || resp.StatusCode != 200 {
					t.Fatalf("reset=%s: %v %v, want headers first", point, resp, err)
				}
				if !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
					t.Errorf("reset=%s: body error %v, want RST_STREAM INTERNAL_ERROR", point, err)
				}
				if point == "mid-body" && len(b) == 0 || point == "after-headers" && len(b) != 0 {
					t.Errorf("reset=%s: got %d body bytes", point, len(b))
				}
			}

			// The connection survived the stream resets.
			resp, _ := mustDo(t, c, "GET", tr.base(e)+"/after", id, "")
			if resp.StatusCode != 200 {
				t.Errorf("after resets: %d", resp.StatusCode)
			}
			ent := waitEntry(t, e.ledger, id, 2)
			if ent.Attempts[0].Conn != ent.Attempts[1].Conn {
				t.Errorf("request after a stream reset went on %q, want the same connection %q", ent.Attempts[1].Conn, ent.Attempts[0].Conn)
			}
		})
	}
}

func TestGoAwayAndCloseHTTP2(t *testing.T) {
	e := newEnv(t)
	for _, tr := range h2Transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.client(e)
			mustDo(t, c, "GET", tr.base(e)+"/warm", "", "")

			// GOAWAY excludes the stream, so the client retries it on a new
			// connection, where the second attempt is answered.
			id := newID(t)
			resp, _ := mustDo(t, c, "GET", tr.base(e)+"/g", id, "fail=1;goaway")
			if resp.StatusCode != 200 {
				t.Errorf("after GOAWAY retry: %d", resp.StatusCode)
			}
			ent := waitEntry(t, e.ledger, id, 2)
			if a, b := ent.Attempts[0], ent.Attempts[1]; a.Outcome != ledger.GoAway || b.Outcome != ledger.Answered || a.Conn == b.Conn {
				t.Errorf("attempts %+v / %+v, want goaway then answered on another connection", a, b)
			}

			id = newID(t)
			if _, _, err := do(t, c, "GET", tr.base(e)+"/g", id, "close", nil); err == nil {
				t.Error("close: answered, want an error")
			}
			if a := waitEntry(t, e.ledger, id, 1).Attempts[0]; a.Outcome != ledger.Closed {
				t.Errorf("close recorded %+v", a)
			}
		})
	}
}

func TestRetryUpstreamContract(t *testing.T) {
	e := newEnv(t)
	c := viaHTTP.client(e)
	var codes []int
	for range 3 {
		resp, _ := mustDo(t, c, "GET", e.httpURL+"/retry?uuid=u1&succeedAfter=2&responseCode=503", "", "")
		codes = append(codes, resp.StatusCode)
	}
	if !equalInts(codes, []int{503, 503, 200}) {
		t.Errorf("retry codes %v, want 503 503 200", codes)
	}
	// Without responseCode, failures are connection resets.
	if _, _, err := do(t, c, "GET", e.httpURL+"/retry/?uuid=u2&succeedAfter=1", "", "", nil); !isReset(err) {
		t.Errorf("retry failure: %v, want a connection reset", err)
	}
	resp, b := mustDo(t, c, "GET", e.httpURL+"/retry/?uuid=u2&succeedAfter=1", "", "")
	if resp.StatusCode != 200 || echoOf(t, b).Attempt != 2 {
		t.Errorf("retry success: %d %s", resp.StatusCode, b)
	}
	if ent := waitEntry(t, e.ledger, "retry/u2", 2); ent.Attempts[0].Outcome != ledger.Reset {
		t.Errorf("retry ledger %+v", ent)
	}
}

func TestRetryUUIDsDoNotWaitOnEachOther(t *testing.T) {
	e := newEnv(t)
	c := viaHTTP.client(e)
	begin := time.Now()
	var wg sync.WaitGroup
	for _, u := range []string{"p1", "p2"} {
		wg.Go(func() {
			resp, _, err := do(t, c, "GET", e.httpURL+"/retry?uuid="+u+"&succeedAfter=1&responseCode=500&delayRetry=1s", "", "", nil)
			if err != nil || resp.StatusCode != 500 {
				t.Errorf("%s: %v %v", u, resp, err)
			}
		})
	}
	wg.Wait()
	// One uuid's sleep must not hold up the other: both finish in about
	// one second, not two.
	if el := time.Since(begin); el < time.Second || el > 1900*time.Millisecond {
		t.Errorf("two uuids with delayRetry=1s took %v, want 1s..1.9s", el)
	}
}

func TestHealthAndAdmin(t *testing.T) {
	e := newEnv(t)
	c := viaHTTP.client(e)
	get := func(path string) (int, string) {
		resp, b := mustDo(t, c, "GET", e.httpURL+path, "", "")
		return resp.StatusCode, string(b)
	}
	post := func(path string) (int, string) {
		resp, b := mustDo(t, c, "POST", e.httpURL+path, "", "")
		return resp.StatusCode, string(b)
	}
	if code, body := get("/health"); code != 200 || body != "OK" {
		t.Errorf("/health: %d %q", code, body)
	}
	if code, body := post("/_gatewitness/admin/health?status=503"); code != 200 || !strings.Contains(body, `"httpHealth": 503`) {
		t.Errorf("set health: %d %s", code, body)
	}
	if code, _ := get("/health"); code != 503 {
		t.Errorf("/health after flip: %d, want 503", code)
	}
	post("/_gatewitness/admin/health?status=200")
	if code, _ := get("/health"); code != 200 {
		t.Errorf("/health after flip back: %d", code)
	}

	if code, body := post("/_gatewitness/admin/grpc-health?service=foo&status=not_serving"); code != 200 {
		t.Errorf("grpc-health: %d %s", code, body)
	}
	var st httpecho.State
	_, body := get("/_gatewitness/admin/state?service=foo&service=bar")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.GRPCHealth["foo"] != "NOT_SERVING" || st.GRPCHealth[""] != "SERVING" || st.GRPCHealth["bar"] != "SERVICE_UNKNOWN" ||
		st.HTTPHealth != 200 || st.TCP.Present {
		t.Errorf("state %+v", st)
	}

	if code, body := post("/_gatewitness/admin/tcp?open=false"); code != 409 || !strings.Contains(body, "TCP") {
		t.Errorf("tcp without a listener: %d %s", code, body)
	}
	sw := &fakeSwitch{open: true}
	e.controls.SetTCPSwitch(sw)
	if code, body := post("/_gatewitness/admin/tcp?open=false"); code != 200 || sw.IsOpen() || !strings.Contains(body, `"open": false`) {
		t.Errorf("tcp close: %d %s (open %v)", code, body, sw.IsOpen())
	}

	for _, tc := range []struct {
		method, path, want string
		code               int
	}{
		// One accepted range, whichever check refuses the value.
		{"POST", "/_gatewitness/admin/health?status=abc", "from 200 to 599", 400},
		{"POST", "/_gatewitness/admin/health?status=101", "from 200 to 599", 400},
		{"POST", "/_gatewitness/admin/health?status=700", "from 200 to 599", 400},
		{"POST", "/_gatewitness/admin/grpc-health?status=HAPPY", "SERVING", 400},
		{"POST", "/_gatewitness/admin/tcp?open=maybe", "open", 400},
		{"GET", "/_gatewitness/admin/health", "POST", 405},
		{"POST", "/_gatewitness/admin/state", "GET", 405},
		{"PUT", "/_gatewitness/ledger/x", "DELETE", 405},
		{"GET", "/_gatewitness/nope", "/_gatewitness/ledger", 404},
	} {
		resp, b := mustDo(t, c, tc.method, e.httpURL+tc.path, "", "")
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s, want %d naming %s", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.want)
		}
	}
}

type fakeSwitch struct {
	mu   sync.Mutex
	open bool
}

func (s *fakeSwitch) SetOpen(open bool) error { s.mu.Lock(); s.open = open; s.mu.Unlock(); return nil }
func (s *fakeSwitch) IsOpen() bool            { s.mu.Lock(); defer s.mu.Unlock(); return s.open }

func TestLedgerEndpoint(t *testing.T) {
	e := newEnv(t)
	c := viaHTTP.client(e)
	id := newID(t) + "/with/slashes"
	mustDo(t, c, "GET", e.httpURL+"/x", id, "status=201")

	resp, b := mustDo(t, c, "GET", e.httpURL+"/_gatewitness/ledger/"+id, "", "")
	var ent ledger.Entry
	if err := json.Unmarshal(b, &ent); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET ledger: %d %s", resp.StatusCode, b)
	}
	if ent.ID != id || len(ent.Attempts) != 1 || ent.Attempts[0].Status != 201 {
		t.Errorf("ledger entry %+v", ent)
	}
	if resp, _ := mustDo(t, c, "DELETE", e.httpURL+"/_gatewitness/ledger/"+id, "", ""); resp.StatusCode != 204 {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
	resp, b = mustDo(t, c, "GET", e.httpURL+"/_gatewitness/ledger/"+id, "", "")
	if resp.StatusCode != 404 || !strings.Contains(string(b), "message") {
		t.Errorf("GET after DELETE: %d %s", resp.StatusCode, b)
	}
}

func TestWebSocket(t *testing.T) {
	e := newEnv(t)
	u := strings.Replace(e.httpURL, "http", "ws", 1) + "/ws"
	ws, err := websocket.Dial(u, "", e.httpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetDeadline(time.Now().Add(10 * time.Second))
	if err := websocket.Message.Send(ws, "hello"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := websocket.Message.Receive(ws, &got); err != nil || got != "hello" {
		t.Errorf("websocket echo %q, %v", got, err)
	}
}
