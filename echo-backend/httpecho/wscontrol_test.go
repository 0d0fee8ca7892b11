package httpecho_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// wsControl opens /ws?gatewitness-ws=mode with request id id and returns the
// connection after the 101.
func wsControl(t *testing.T, httpURL, mode, id string) (*net.TCPConn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(httpURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET /ws?" + httpecho.WSModeQuery + "=" + mode + "&gatewitness-id=" + url.QueryEscape(id) + " HTTP/1.1\r\nHost: x\r\n" +
		"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 6455 section 1.3's example key and accept value.
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("upgrade: %d %v, want 101 with the RFC 6455 accept value", resp.StatusCode, resp.Header)
	}
	return conn, br
}

// endedAttempt polls the ledger until id's attempt has ended.
func endedAttempt(t *testing.T, l *ledger.Ledger, id string) ledger.Attempt {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e, ok := l.Get(id); ok && len(e.Attempts) == 1 && e.Attempts[0].Ended != nil {
			return e.Attempts[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger %s: no ended attempt within 10s", id)
		}
		tick := time.NewTimer(10 * time.Millisecond)
		<-tick.C // polling interval
	}
}

func TestWSControlHalfClose(t *testing.T) {
	e := newEnv(t)
	id := newID(t)
	conn, br := wsControl(t, e.httpURL, "halfclose", id)
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the 101: read %v, want EOF (the backend's half-close)", err)
	}
	const wait = 300 * time.Millisecond
	closeAt := time.NewTimer(wait)
	<-closeAt.C // the peer's delay under test, not synchronisation
	closed := time.Now()
	conn.Close()
	a := endedAttempt(t, e.ledger, id)
	if a.HeadersSent == nil || a.Outcome != ledger.Answered || a.Fault != "gatewitness-ws=halfclose" {
		t.Fatalf("attempt %+v", a)
	}
	// The backend and this test share a clock: the attempt must end when
	// the peer closed, not at the half-close and not long after. (Timed
	// from HeadersSent instead, the 300ms came out 297ms under load: the
	// backend can record HeadersSent after the client has read the 101
	// and its EOF, and started waiting.)
	if d := a.Ended.Sub(closed); d < 0 || d > tolerance {
		t.Errorf("the attempt ended %v after the peer closed (%v after its headers), want within [0, %v]: at the peer's close",
			d, a.Ended.Sub(*a.HeadersSent), tolerance)
	}
}

func TestWSControlHold(t *testing.T) {
	e := newEnv(t)
	id := newID(t)
	conn, br := wsControl(t, e.httpURL, "hold", id)
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	a := endedAttempt(t, e.ledger, id)
	if a.Outcome != ledger.Answered || a.Fault != "gatewitness-ws=hold" {
		t.Fatalf("attempt %+v", a)
	}
	// The backend stays open and silent after the half-close.
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var ne net.Error
	if _, err := br.ReadByte(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("after the half-close: read %v, want nothing (a read timeout)", err)
	}
}

func TestWSControlBadMode(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.httpURL + "/ws?" + httpecho.WSModeQuery + "=shout")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "accepted: halfclose or hold") {
		t.Errorf("bad mode: %d %q, want 400 naming the accepted modes", resp.StatusCode, b)
	}
}
