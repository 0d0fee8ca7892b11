package httpecho_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// trickle is a request body that sends one byte a second until stopped.
type trickle struct {
	stop chan struct{}
	once sync.Once
	sent bool
}

func newTrickle() *trickle { return &trickle{stop: make(chan struct{})} }

func (b *trickle) Read(p []byte) (int, error) {
	if b.sent {
		select {
		case <-b.stop:
			return 0, io.ErrUnexpectedEOF
		case <-time.After(time.Second):
		}
	}
	b.sent = true
	p[0] = 'x'
	return 1, nil
}

func (b *trickle) Close() error { b.once.Do(func() { close(b.stop) }); return nil }

// TestSlowBodyIsCutByReadTimeout sends a request body at one byte a second
// and wants the backend to give up with 408 once the read timeout has
// passed since the request arrived, not before and not much after, on
// every transport, and the ledger to say so.
func TestSlowBodyIsCutByReadTimeout(t *testing.T) {
	const readTimeout = 1500 * time.Millisecond
	e := newEnvWith(t, func(o *httpecho.Options) { o.Timeouts.Read = readTimeout })
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			body := newTrickle()
			defer body.Close()
			id := "slow-body-" + tr.name
			req, err := http.NewRequest(http.MethodPost, tr.base(e)+"/upload", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Gatewitness-Id", id)
			start := time.Now()
			resp, err := tr.client(e).Do(req)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("after %v: %v", elapsed, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Errorf("status %d, want 408", resp.StatusCode)
			}
			if elapsed < readTimeout || elapsed > readTimeout+tolerance {
				t.Errorf("answered after %v, want between %v and %v", elapsed, readTimeout, readTimeout+tolerance)
			}
			entry := waitEntry(t, e.ledger, id, 1)
			if len(entry.Attempts) != 1 || entry.Attempts[0].Status != 408 || entry.Attempts[0].Outcome != ledger.Rejected {
				t.Errorf("ledger %+v, want one rejected attempt answered 408", entry)
			}
		})
	}
}

// TestReadTimeoutLeavesDelaysAlone waits out a delay fault three times the
// read timeout after a request with a body, on every transport: the body
// arrived in time, so the delay must run its course (net/http's own
// ReadTimeout would cancel the request when it expires).
func TestReadTimeoutLeavesDelaysAlone(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	e := newEnvWith(t, func(o *httpecho.Options) { o.Timeouts.Read = readTimeout })
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			resp, _, err := do(t, tr.client(e), http.MethodPost, tr.base(e)+"/", "delay-"+tr.name, "delay=1500ms", strings.NewReader("payload"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || time.Since(start) < 1500*time.Millisecond {
				t.Errorf("status %d after %v, want 200 after the 1.5s delay", resp.StatusCode, time.Since(start))
			}
			if entry := waitEntry(t, e.ledger, "delay-"+tr.name, 1); len(entry.Attempts) != 1 || entry.Attempts[0].Outcome != ledger.Answered {
				t.Errorf("ledger %+v, want one answered attempt", entry)
			}
		})
	}
}

// TestMalformedChunkedBodyIs400 sends bodies with broken chunked framing
// and wants 400 naming the problem, not an empty 200.
func TestMalformedChunkedBodyIs400(t *testing.T) {
	e := newEnv(t)
	addr := strings.TrimPrefix(e.httpURL, "http://")
	for i, body := range []string{
		"zz\r\nhello\r\n0\r\n\r\n",          // chunk size not hex
		"5\r\nhelloXX3\r\nabc\r\n0\r\n\r\n", // chunk data without its CRLF
	} {
		id := fmt.Sprint("bad-chunk-", i)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Gatewitness-Id: %s\r\nTransfer-Encoding: chunked\r\n\r\n%s", id, body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "request body") {
			t.Errorf("body %q: %d %s, want 400 naming the request body", body, resp.StatusCode, msg)
		}
		if entry := waitEntry(t, e.ledger, id, 1); len(entry.Attempts) != 1 || entry.Attempts[0].Status != 400 {
			t.Errorf("body %q: ledger %+v, want one attempt answered 400", body, entry)
		}
	}
}

// TestIdleConnectionIsClosed keeps an HTTP/1.1 connection alive after a
// request and wants the backend to close it once the idle timeout has
// passed.
func TestIdleConnectionIsClosed(t *testing.T) {
	const idle = 500 * time.Millisecond
	e := newEnvWith(t, func(o *httpecho.Options) { o.Timeouts.Idle = idle })
	c, err := net.Dial("tcp", strings.TrimPrefix(e.httpURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("read on the idle connection: %v, want EOF", err)
	}
	if elapsed := time.Since(start); elapsed < idle-50*time.Millisecond || elapsed > idle+tolerance {
		t.Errorf("closed after %v idle, want about %v", elapsed, idle)
	}
}

// TestErrorLogOption sends an HTTP/2 connection that breaks the protocol
// and wants the server's line about it in Options.ErrorLog, which is
// where -quiet sends io.Discard.
func TestErrorLogOption(t *testing.T) {
	var log syncBuffer
	e := newEnvWith(t, func(o *httpecho.Options) { o.ErrorLog = &log })
	c, err := net.Dial("tcp", strings.TrimPrefix(e.h2cURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// The preface, then a WINDOW_UPDATE of the connection by zero: a
	// connection error (RFC 9113 section 6.9).
	fmt.Fprint(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"+
		"\x00\x00\x04\x08\x00\x00\x00\x00\x00"+"\x00\x00\x00\x00")
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c)
	c.Close()
	gomega.NewWithT(t).Eventually(log.String).WithTimeout(10*time.Second).
		Should(gomega.ContainSubstring("PROTOCOL_ERROR"), "the log of a connection that broke HTTP/2")
}
