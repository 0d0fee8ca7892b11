package h2tap_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// rawClient is a hand-driven HTTP/2 client: it writes exactly the frames a
// test asks for, with an HPACK encoder that does use the dynamic table.
type rawClient struct {
	t      *testing.T
	conn   net.Conn
	fr     *http2.Framer
	encBuf bytes.Buffer
	enc    *hpack.Encoder
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(testTimeout))
	rc := &rawClient{t: t, conn: c, fr: http2.NewFramer(c, c)}
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	rc.fr.MaxHeaderListSize = 1 << 20
	rc.enc = hpack.NewEncoder(&rc.encBuf)
	if _, err := io.WriteString(c, preface); err != nil {
		t.Fatal(err)
	}
	if err := rc.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *rawClient) block(fields ...string) []byte {
	rc.encBuf.Reset()
	for i := 0; i < len(fields); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(rc.encBuf.Bytes())
}

// response reads frames until stream id ends and returns its headers and body.
func (rc *rawClient) response(id uint32) (http.Header, string) {
	rc.t.Helper()
	hdr := http.Header{}
	var body bytes.Buffer
	for {
		f, err := rc.fr.ReadFrame()
		if err != nil {
			rc.t.Fatalf("reading stream %d: %v", id, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				rc.fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != id {
				rc.t.Fatalf("headers for stream %d, want %d", f.StreamID, id)
			}
			for _, hf := range f.Fields {
				hdr.Add(hf.Name, hf.Value)
			}
			if f.StreamEnded() {
				return hdr, body.String()
			}
		case *http2.DataFrame:
			body.Write(f.Data())
			if f.StreamEnded() {
				return hdr, body.String()
			}
		case *http2.RSTStreamFrame:
			rc.t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
		case *http2.GoAwayFrame:
			rc.t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
}

// echoHeaders answers with the request's headers, one "name: value" a line.
func echoHeaders(w http.ResponseWriter, r *http.Request) {
	for _, k := range []string{"X-K", "X-Big", h2tap.StreamHeader} {
		for _, v := range r.Header.Values(k) {
			io.WriteString(w, strings.ToLower(k)+": "+v+"\n")
		}
	}
}

func TestPaddingPriorityContinuationAndTableUpdates(t *testing.T) {
	rc := dialRaw(t, serveH2C(t, http.HandlerFunc(echoHeaders)))
	big := strings.Repeat("b", 20000)

	// Stream 1: padded, with priority, split over HEADERS + CONTINUATION.
	b := rc.block(":method", "GET", ":scheme", "http", ":authority", "tap.test", ":path", "/", "x-k", "v1")
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: 1, BlockFragment: b[:5], EndStream: true, PadLength: 9,
		Priority: http2.PriorityParam{StreamDep: 0, Weight: 200, Exclusive: true},
	}); err != nil {
		t.Fatal(err)
	}
	if err := rc.fr.WriteContinuation(1, true, b[5:]); err != nil {
		t.Fatal(err)
	}
	_, body := rc.response(1)
	if !strings.Contains(body, "x-k: v1\n") || !strings.Contains(body, h2tap.StreamHeader+": ") || !strings.HasSuffix(body, "/1\n") {
		t.Errorf("stream 1 body %q", body)
	}

	// Stream 3: shrink the dynamic table (the encoder sends an update),
	// reuse indexed fields, add a header bigger than one frame.
	rc.enc.SetMaxDynamicTableSize(1024)
	b = rc.block(":method", "GET", ":scheme", "http", ":authority", "tap.test", ":path", "/", "x-k", "v1", "x-big", big)
	var frags [][]byte
	for len(b) > 0 {
		n := min(len(b), 8000)
		frags, b = append(frags, b[:n]), b[n:]
	}
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: frags[0], EndStream: true}); err != nil {
		t.Fatal(err)
	}
	for i, f := range frags[1:] {
		if err := rc.fr.WriteContinuation(3, i == len(frags)-2, f); err != nil {
			t.Fatal(err)
		}
	}
	_, body = rc.response(3)
	if !strings.Contains(body, "x-k: v1\n") || !strings.Contains(body, "x-big: "+big+"\n") || !strings.HasSuffix(body, "/3\n") {
		t.Errorf("stream 3 body has %d bytes, want x-k, x-big (%d bytes) and tag", len(body), len(big))
	}

	// Stream 5: a big response header, which the tap re-encodes across a
	// HEADERS and CONTINUATION frames.
	b = rc.block(":method", "GET", ":scheme", "http", ":authority", "tap.test", ":path", "/")
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: b, EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	_, body = rc.response(5)
	if !strings.HasSuffix(body, "/5\n") {
		t.Errorf("stream 5 body %q", body)
	}
}

func TestBigResponseHeaders(t *testing.T) {
	big := strings.Repeat("r", 40000)
	addr := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", big)
		io.WriteString(w, r.Header.Get("X-Big"))
	}))
	cc := dialH2C(t, addr)
	for range 2 {
		res, err := doGet(t, cc, "http://tap.test/", http.Header{"X-Big": {big + "q"}})
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, res); body != big+"q" {
			t.Errorf("request header arrived with %d bytes, want %d", len(body), len(big)+1)
		}
		if got := res.Header.Get("X-Big"); got != big {
			t.Errorf("response header arrived with %d bytes, want %d", len(got), len(big))
		}
	}
}

// TestOversizedHeaderBlockEndsConnection: a header block over the tap's
// limit cannot be rewritten; the connection ends instead of buffering on.
func TestOversizedHeaderBlockEndsConnection(t *testing.T) {
	rc := dialRaw(t, serveH2C(t, http.HandlerFunc(echoHeaders)))
	chunk := bytes.Repeat([]byte{0}, 16384)
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: chunk}); err != nil {
		t.Fatal(err)
	}
	// Keep writing CONTINUATION frames until the connection breaks, or
	// far past the limit (which would mean the tap buffers without bound).
	for written := len(chunk); ; written += len(chunk) {
		if written > 64<<20 {
			t.Fatalf("wrote %d bytes of one header block and the connection is still up", written)
		}
		if err := rc.fr.WriteContinuation(1, false, chunk); err != nil {
			return // the server closed the connection
		}
	}
}

// TestReadDeadline checks the tap's own read deadline once it reads the
// socket in the background, and that a deadline can be extended.
func TestReadDeadline(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := h2tap.Wrap(a)
	defer c.Close()
	go func() {
		b.Write([]byte(preface))
	}()
	got := make([]byte, len(preface))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != preface {
		t.Fatalf("read %q, %v", got, err)
	}
	if !c.IsHTTP2() {
		t.Fatal("IsHTTP2 false after the preface")
	}

	const wait = 100 * time.Millisecond
	start := time.Now()
	c.SetReadDeadline(start.Add(wait))
	_, err := c.Read(got)
	elapsed := time.Since(start)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if elapsed < wait || elapsed > wait+10*time.Second {
		t.Errorf("timed out after %v, want %v to %v", elapsed, wait, wait+10*time.Second)
	}

	// Extended: the next frame arrives.
	c.SetReadDeadline(time.Now().Add(testTimeout))
	ping := []byte{0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	go b.Write(ping)
	got = make([]byte, len(ping))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, ping) {
		t.Fatalf("read %v, %v; want the PING frame unchanged", got, err)
	}
}

// TestServerFramesSplitAnywhere writes server frames to the tap one byte at
// a time and checks the client gets the same frames (headers re-encoded).
func TestServerFramesSplitAnywhere(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := h2tap.Wrap(a)
	defer c.Close()

	// What the server writes: settings, a padded HEADERS + CONTINUATION
	// whose encoder indexes fields, a DATA frame, a second HEADERS that
	// refers to the first's table entries, a PING.
	var wire bytes.Buffer
	fr := http2.NewFramer(&wire, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	for _, f := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "x-a", Value: "one"}, {Name: "x-b", Value: "two"}} {
		enc.WriteField(f)
	}
	first := bytes.Clone(hb.Bytes())
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first[:3], PadLength: 4})
	fr.WriteContinuation(1, true, first[3:])
	fr.WriteData(1, false, []byte("hello"))
	hb.Reset()
	for _, f := range []hpack.HeaderField{{Name: "x-a", Value: "one"}, {Name: "x-b", Value: "two"}} {
		enc.WriteField(f)
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})

	// The client's preface makes the connection HTTP/2.
	go b.Write([]byte(preface))
	if _, err := io.ReadFull(c, make([]byte, len(preface))); err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, x := range wire.Bytes() {
			if _, err := c.Write([]byte{x}); err != nil {
				t.Errorf("Write: %v", err)
				return
			}
		}
	}()

	cf := http2.NewFramer(nil, b)
	cf.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	next := func() http2.Frame {
		t.Helper()
		f, err := cf.ReadFrame()
		if err != nil {
			t.Fatalf("client read: %v", err)
		}
		return f
	}
	if f, ok := next().(*http2.SettingsFrame); !ok {
		t.Fatalf("got %v, want SETTINGS", f)
	}
	fields := func(f http2.Frame) string {
		t.Helper()
		mh, ok := f.(*http2.MetaHeadersFrame)
		if !ok {
			t.Fatalf("got %v, want HEADERS", f)
		}
		var s []string
		for _, hf := range mh.Fields {
			s = append(s, hf.Name+"="+hf.Value)
		}
		return strings.Join(s, " ")
	}
	if got, want := fields(next()), ":status=200 x-a=one x-b=two"; got != want {
		t.Errorf("first headers %q, want %q", got, want)
	}
	if f, ok := next().(*http2.DataFrame); !ok || string(f.Data()) != "hello" {
		t.Fatalf("got %v, want DATA hello", f)
	}
	f := next()
	if got, want := fields(f), "x-a=one x-b=two"; got != want || !f.Header().Flags.Has(http2.FlagHeadersEndStream) {
		t.Errorf("trailers %q (END_STREAM %v), want %q with END_STREAM", got, f.Header().Flags.Has(http2.FlagHeadersEndStream), want)
	}
	if f, ok := next().(*http2.PingFrame); !ok || f.Data != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
		t.Fatalf("got %v, want the PING", f)
	}
}

func TestConnBasics(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := h2tap.Wrap(a)
	if got, ok := h2tap.Lookup(c.ID()); !ok || got != c {
		t.Fatalf("Lookup(%d) = %v, %v", c.ID(), got, ok)
	}
	if c.NetConn() != a {
		t.Error("NetConn is not the wrapped conn")
	}
	if err := c.ResetStream(1, 8); err == nil {
		t.Error("ResetStream before HTTP/2 was detected: no error")
	}
	go b.Write([]byte(preface))
	if _, err := io.ReadFull(c, make([]byte, len(preface))); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{0, 1 << 31, 1} { // 1: not opened yet
		if err := c.ResetStream(id, 8); err == nil {
			t.Errorf("ResetStream(%d): no error", id)
		} else if !strings.Contains(err.Error(), "stream") {
			t.Errorf("ResetStream(%d): error %q does not name the stream", id, err)
		}
	}
	err1, err2 := c.Close(), c.Close()
	if err1 != err2 {
		t.Errorf("Close twice: %v then %v", err1, err2)
	}
	if _, ok := h2tap.Lookup(c.ID()); ok {
		t.Error("Lookup finds a closed connection")
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v, want net.ErrClosed", err)
	}
	if c2 := h2tap.Wrap(b); c2.ID() == c.ID() {
		t.Error("two connections share an id")
	} else {
		c2.Close()
	}
}

func TestParseStreamHeader(t *testing.T) {
	for _, tc := range []struct {
		in     string
		conn   uint64
		stream uint32
		ok     bool
	}{
		{"12/5", 12, 5, true},
		{"1/2147483647", 1, 1<<31 - 1, true},
		{"18446744073709551615/1", 1<<64 - 1, 1, true},
		{"1/2147483648", 0, 0, false},
		{"0/1", 0, 0, false},
		{"1/0", 0, 0, false},
		{"12", 0, 0, false},
		{"12/", 0, 0, false},
		{"/5", 0, 0, false},
		{"12/5/1", 0, 0, false},
		{"-1/5", 0, 0, false},
		{"+1/5", 0, 0, false},
		{"1 /5", 0, 0, false},
		{"", 0, 0, false},
	} {
		conn, stream, ok := h2tap.ParseStreamHeader(tc.in)
		if conn != tc.conn || stream != tc.stream || ok != tc.ok {
			t.Errorf("ParseStreamHeader(%q) = %d, %d, %v; want %d, %d, %v", tc.in, conn, stream, ok, tc.conn, tc.stream, tc.ok)
		}
	}
}
