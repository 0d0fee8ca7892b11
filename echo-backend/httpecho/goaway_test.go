package httpecho_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/internal/h2test"
)

// goAwayCode sends one GET with the fault spec over a hand-driven h2c
// connection (Go's client does not show the code of a GOAWAY that excludes
// the request) and returns the code of the GOAWAY the server sends.
func goAwayCode(t *testing.T, addr, spec string) http2.ErrCode {
	t.Helper()
	c := h2test.Dial(t, addr)
	c.WriteHeaders(1, true, ":method", "GET", ":scheme", "http", ":path", "/goaway", ":authority", addr,
		strings.ToLower(echowire.FaultHeader), spec)
	ga, err := c.ReadGoAway()
	if err != nil {
		t.Fatalf("%s: %v, want a GOAWAY", spec, err)
	}
	if ga.LastStreamID != 0 {
		t.Errorf("%s: GOAWAY last stream %d, want 0 (stream 1 excluded)", spec, ga.LastStreamID)
	}
	return ga.ErrCode
}

// goaway sends NO_ERROR unless reset-code names a code, INTERNAL_ERROR
// included.
func TestGoAwayCode(t *testing.T) {
	e := newEnv(t)
	addr := strings.TrimPrefix(e.h2cURL, "http://")
	for _, tc := range []struct {
		spec string
		want http2.ErrCode
	}{
		{"goaway", http2.ErrCodeNo},
		{"goaway;reset-code=INTERNAL_ERROR", http2.ErrCodeInternal},
		{"goaway;reset-code=ENHANCE_YOUR_CALM", http2.ErrCodeEnhanceYourCalm},
	} {
		if got := goAwayCode(t, addr, tc.spec); got != tc.want {
			t.Errorf("%s: GOAWAY %v, want %v", tc.spec, got, tc.want)
		}
	}
}

// The reported case: script=body-delay:2s|goaway on two concurrent streams
// of one h2c connection. GOAWAY excludes stream 3 only, so stream 1, in its
// body delay, completes with its whole echo body and is recorded answered.
func TestGoAwayLetsLowerStreamComplete(t *testing.T) {
	e := newEnv(t)
	c, err := net.Dial("tcp", strings.TrimPrefix(e.h2cURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := newID(t)
	get := func() (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", e.h2cURL+"/lower", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Gatewitness-Id", id)
		req.Header.Set("X-Gatewitness-Fault", "script=body-delay:2s|goaway")
		return cc.RoundTrip(req)
	}

	// The first answer's headers come before its body delay.
	first, err := get()
	if err != nil {
		t.Fatalf("first request: %v", err)
	}
	defer first.Body.Close()
	if _, err := get(); err == nil {
		t.Fatal("second request answered, want it cut off by GOAWAY")
	}
	body, err := io.ReadAll(first.Body)
	if err != nil {
		t.Fatalf("first request's body: %v after %d bytes, want the whole body", err, len(body))
	}
	var echo httpecho.Echo
	if err := json.Unmarshal(body, &echo); err != nil || echo.Path != "/lower" {
		t.Errorf("first request's body %q (%v), want its echo", body, err)
	}
	ent := waitEntry(t, e.ledger, id, 2)
	a, b := ent.Attempts[0], ent.Attempts[1]
	if a.Outcome != ledger.Answered || a.Stream != 1 || b.Outcome != ledger.GoAway || b.Stream != 3 {
		t.Errorf("attempts %+v / %+v, want stream 1 answered and stream 3 goaway", a, b)
	}
	if !b.Arrived.Before(*a.Ended) {
		t.Errorf("the GOAWAY attempt arrived at %v, after the first ended at %v: the streams did not overlap", b.Arrived, *a.Ended)
	}
}
