package h2tap_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// tapPipe is a tapped connection over a pipe, driven by hand: the test
// writes the client's frames on client and the server's frames through
// server, which reads from and writes to the tap.
type tapPipe struct {
	t      *testing.T
	tap    *h2tap.Conn
	client net.Conn
	cfr    *http2.Framer // the client's writer
	server *http2.Framer // the server's reader and writer, on the tap
	hbuf   bytes.Buffer
	enc    *hpack.Encoder
	got    chan string // what the client read, one line per frame, once reading
}

// newTapPipe opens a tapped pipe and sends the client preface through it.
func newTapPipe(t *testing.T) *tapPipe {
	t.Helper()
	a, b := net.Pipe()
	tp := &tapPipe{t: t, tap: h2tap.Wrap(a), client: b, cfr: http2.NewFramer(b, nil)}
	t.Cleanup(func() {
		tp.tap.Close()
		b.Close()
	})
	tp.server = http2.NewFramer(tp.tap, tp.tap)
	tp.server.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	tp.enc = hpack.NewEncoder(&tp.hbuf)
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(b, preface)
		wrote <- err
	}()
	if _, err := io.ReadFull(tp.tap, make([]byte, len(preface))); err != nil {
		t.Fatalf("server reading the preface: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("client writing the preface: %v", err)
	}
	return tp
}

// read starts reading what the client receives, so that server writes do
// not block, and has the server send its SETTINGS, which the tap must
// forward before it resets a stream.
func (tp *tapPipe) read() {
	defer func() {
		if err := tp.server.WriteSettings(); err != nil {
			tp.t.Fatalf("server SETTINGS: %v", err)
		}
	}()
	tp.got = make(chan string, 1000)
	fr := http2.NewFramer(nil, tp.client)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	go func() {
		defer close(tp.got)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if _, ok := f.(*http2.SettingsFrame); !ok {
				tp.got <- describe(f)
			}
		}
	}()
}

// describe is a one-line summary of a frame.
func describe(f http2.Frame) string {
	h := f.Header()
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		var s []string
		for _, hf := range f.Fields {
			s = append(s, hf.Name+"="+hf.Value)
		}
		return fmt.Sprintf("HEADERS %d %s end=%v", h.StreamID, strings.Join(s, " "), f.StreamEnded())
	case *http2.DataFrame:
		return fmt.Sprintf("DATA %d %q end=%v", h.StreamID, f.Data(), f.StreamEnded())
	case *http2.RSTStreamFrame:
		return fmt.Sprintf("RST_STREAM %d %v", h.StreamID, f.ErrCode)
	}
	return fmt.Sprintf("%v %d", h.Type, h.StreamID)
}

// next returns the next frame the client read.
func (tp *tapPipe) next() string {
	tp.t.Helper()
	s, ok := <-tp.got
	if !ok {
		tp.t.Fatal("the client's connection ended")
	}
	return s
}

// open has the client open stream id and the server read its HEADERS.
func (tp *tapPipe) open(id uint32) {
	tp.t.Helper()
	tp.hbuf.Reset()
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/"}, {Name: ":authority", Value: "tap.test"}} {
		tp.enc.WriteField(f)
	}
	if err := tp.cfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: tp.hbuf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		tp.t.Fatalf("client HEADERS: %v", err)
	}
	tp.serverReads(fmt.Sprintf("HEADERS %d", id))
}

// serverReads reads client frames on the server side until one whose
// summary starts with prefix.
func (tp *tapPipe) serverReads(prefix string) {
	tp.t.Helper()
	for {
		f, err := tp.server.ReadFrame()
		if err != nil {
			tp.t.Fatalf("server reading: %v", err)
		}
		if strings.HasPrefix(describe(f), prefix) {
			return
		}
	}
}

// headers has the server write a header block on stream id.
func (tp *tapPipe) headers(id uint32, end bool, fields ...string) {
	tp.t.Helper()
	tp.hbuf.Reset()
	for i := 0; i < len(fields); i += 2 {
		tp.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	if err := tp.server.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: tp.hbuf.Bytes(), EndStream: end, EndHeaders: true}); err != nil {
		tp.t.Fatalf("server HEADERS: %v", err)
	}
}

// reached reports, without waiting, whether WaitWritten's condition holds
// on a stream that has not ended.
func (tp *tapPipe) reached(id uint32, headers bool, n int64) bool {
	tp.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := tp.tap.WaitWritten(ctx, id, headers, n)
	if err != nil && !errors.Is(err, context.Canceled) {
		tp.t.Fatalf("WaitWritten(%d, %v, %d): %v", id, headers, n, err)
	}
	return err == nil
}

// waitAsync runs WaitWritten in a goroutine.
func (tp *tapPipe) waitAsync(id uint32, headers bool, n int64) <-chan error {
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	tp.t.Cleanup(cancel)
	go func() { done <- tp.tap.WaitWritten(ctx, id, headers, n) }()
	return done
}

func TestWaitWrittenArguments(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := h2tap.Wrap(a)
	defer c.Close()
	ctx := context.Background()
	if err := c.WaitWritten(ctx, 1, true, 0); err == nil || !strings.Contains(err.Error(), "not HTTP/2") {
		t.Errorf("WaitWritten before HTTP/2 was detected: %v, want an error saying it is not HTTP/2", err)
	}

	tp := newTapPipe(t)
	tp.open(1)
	for _, id := range []uint32{0, 1 << 31, 3} { // 3: not opened
		err := tp.tap.WaitWritten(ctx, id, true, 0)
		if err == nil || !strings.Contains(err.Error(), "stream") || !strings.Contains(err.Error(), fmt.Sprint(id)) {
			t.Errorf("WaitWritten(%d): %v, want an error naming the stream", id, err)
		}
	}
}

func TestWaitWrittenCountsWhatWasForwarded(t *testing.T) {
	tp := newTapPipe(t)
	tp.read()
	tp.open(1)
	tp.open(3)
	waiter := tp.waitAsync(1, true, 8)

	if tp.reached(1, true, 0) {
		t.Fatal("headers counted before any was written")
	}
	if !tp.reached(1, false, 0) {
		t.Error("an empty condition is not reached")
	}
	// An informational response is not the response headers.
	tp.headers(1, false, ":status", "103", "link", "</a>")
	if got := tp.next(); !strings.HasPrefix(got, "HEADERS 1 :status=103") {
		t.Fatalf("client got %s, want the 103", got)
	}
	if tp.reached(1, true, 0) {
		t.Error("a 103 counts as the response headers")
	}
	tp.headers(1, false, ":status", "200")
	tp.next()
	if !tp.reached(1, true, 0) || tp.reached(1, true, 1) {
		t.Error("after HEADERS: want headers and no data")
	}
	if tp.reached(3, true, 0) {
		t.Error("stream 3 got stream 1's headers")
	}
	// Padding is not data.
	if err := tp.server.WriteDataPadded(1, false, []byte("hello"), make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if got, want := tp.next(), `DATA 1 "hello" end=false`; got != want {
		t.Fatalf("client got %s, want %s", got, want)
	}
	if !tp.reached(1, true, 5) || tp.reached(1, true, 6) {
		t.Error("after 5 data bytes and 10 of padding: want exactly 5 counted")
	}
	select {
	case err := <-waiter:
		t.Fatalf("WaitWritten(8 bytes) returned %v after 5", err)
	default:
	}
	if err := tp.server.WriteData(1, false, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("WaitWritten(8 bytes) after 8: %v", err)
	}
	// Once the stream ended, what was forwarded still counts, and more
	// never comes.
	tp.headers(1, true, "grpc-status", "0")
	if !tp.reached(1, true, 8) {
		t.Error("an ended stream forgot its progress")
	}
	if err := tp.tap.WaitWritten(context.Background(), 1, true, 9); !errors.Is(err, h2tap.ErrStreamEnded) {
		t.Errorf("waiting for more than an ended stream sent: %v, want ErrStreamEnded", err)
	}
}

// Frames split across many Writes count once their last byte went.
func TestWaitWrittenFramesSplitAcrossWrites(t *testing.T) {
	tp := newTapPipe(t)
	tp.read()
	tp.open(1)
	var wire bytes.Buffer
	fr := http2.NewFramer(&wire, nil)
	fr.WriteData(1, false, []byte("0123456789"))
	b := wire.Bytes()
	for i := range b {
		if tp.reached(1, false, 1) {
			t.Fatalf("data counted after %d of the frame's %d bytes", i, len(b))
		}
		if _, err := tp.tap.Write(b[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	tp.next()
	if !tp.reached(1, false, 10) {
		t.Error("data not counted once the frame went")
	}
}

func TestWaitWrittenStreamEnds(t *testing.T) {
	tp := newTapPipe(t)
	tp.read()
	ctx := context.Background()
	for _, id := range []uint32{1, 3, 5} {
		tp.open(id)
	}
	w1, w3, w5 := tp.waitAsync(1, true, 0), tp.waitAsync(3, true, 0), tp.waitAsync(5, true, 0)

	// The client resets stream 1.
	if err := tp.cfr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	tp.serverReads("RST_STREAM 1")
	if err := <-w1; !errors.Is(err, h2tap.ErrStreamEnded) {
		t.Errorf("stream 1 reset by the client: %v, want ErrStreamEnded", err)
	}
	// The server resets stream 3.
	if err := tp.server.WriteRSTStream(3, http2.ErrCodeInternal); err != nil {
		t.Fatal(err)
	}
	if err := <-w3; !errors.Is(err, h2tap.ErrStreamEnded) {
		t.Errorf("stream 3 reset by the server: %v, want ErrStreamEnded", err)
	}
	// The tap resets stream 5.
	if err := tp.tap.ResetStream(5, uint32(http2.ErrCodeCancel)); err != nil {
		t.Fatal(err)
	}
	if err := <-w5; !errors.Is(err, h2tap.ErrStreamEnded) {
		t.Errorf("stream 5 reset by the tap: %v, want ErrStreamEnded", err)
	}

	// Long-ended streams are forgotten, and still count as ended; open
	// ones are kept however many others end.
	tp.open(7)
	tp.headers(7, false, ":status", "200")
	tp.open(9)
	tp.headers(9, true, ":status", "204")
	if err := tp.tap.WaitWritten(ctx, 9, true, 0); err != nil {
		t.Errorf("stream 9, ended with its headers: %v", err)
	}
	for id := uint32(11); id < 11+2*200; id += 2 {
		tp.open(id)
		tp.headers(id, true, ":status", "204")
	}
	for _, id := range []uint32{1, 9} {
		if err := tp.tap.WaitWritten(ctx, id, true, 0); !errors.Is(err, h2tap.ErrStreamEnded) {
			t.Errorf("forgotten stream %d: %v, want ErrStreamEnded", id, err)
		}
	}
	if !tp.reached(7, true, 0) || tp.reached(7, true, 1) {
		t.Error("open stream 7 lost its progress")
	}
}

func TestWaitWrittenConnectionEnds(t *testing.T) {
	for _, how := range []string{"close", "goaway"} {
		t.Run(how, func(t *testing.T) {
			tp := newTapPipe(t)
			tp.read()
			tp.open(1)
			waiter := tp.waitAsync(1, true, 0)
			if how == "close" {
				tp.tap.Close()
			} else if err := tp.tap.GoAway(0, 0); err != nil {
				t.Fatal(err)
			}
			if err := <-waiter; !errors.Is(err, net.ErrClosed) {
				t.Errorf("waiter: %v, want net.ErrClosed", err)
			}
			if err := tp.tap.WaitWritten(context.Background(), 1, true, 0); !errors.Is(err, net.ErrClosed) {
				t.Errorf("WaitWritten afterwards: %v, want net.ErrClosed", err)
			}
		})
	}
}

// Once ctx is done, frames that a Write is handing to the socket count: the
// client may already have them.
func TestWaitWrittenCountsFramesInFlightOnceDone(t *testing.T) {
	tp := newTapPipe(t) // no reader: the tap's Write blocks on the pipe
	tp.open(1)
	wrote := make(chan error, 1)
	go func() {
		tp.hbuf.Reset()
		tp.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		wrote <- tp.server.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: tp.hbuf.Bytes(), EndHeaders: true})
	}()
	// The Write has started once its first byte can be read.
	if _, err := io.ReadFull(tp.client, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tp.tap.WaitWritten(ctx, 1, true, 0); err != nil {
		t.Errorf("headers in flight, ctx done: %v, want nil", err)
	}
	if err := tp.tap.WaitWritten(ctx, 1, true, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("data never written, ctx done: %v, want context.Canceled", err)
	}
	go io.Copy(io.Discard, tp.client)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if !tp.reached(1, true, 0) {
		t.Error("headers not counted after the Write")
	}
}

// A connection counts at most 16384 streams at once; past that the lowest
// is forgotten (and counts as ended).
func TestWaitWrittenBoundsOpenStreams(t *testing.T) {
	const maxTracked = 16384
	tp := newTapPipe(t)
	tp.read()
	var wire bytes.Buffer
	fr := http2.NewFramer(&wire, nil)
	for i := range maxTracked + 1 {
		// An empty header block is enough to open a stream.
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), EndHeaders: true})
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := tp.client.Write(wire.Bytes())
		wrote <- err
	}()
	tp.serverReads(fmt.Sprintf("HEADERS %d", 2*maxTracked+1))
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := tp.tap.WaitWritten(context.Background(), 1, true, 0); !errors.Is(err, h2tap.ErrStreamEnded) {
		t.Errorf("stream 1 with 16385 streams open: %v, want ErrStreamEnded (forgotten)", err)
	}
	for _, id := range []uint32{3, 2*maxTracked + 1} {
		if tp.reached(id, true, 0) {
			t.Errorf("stream %d forgotten", id)
		}
	}
}

// A client treats a first frame other than SETTINGS as a connection error,
// so a reset issued before the server's SETTINGS went out waits for them.
func TestResetStreamWaitsForServerSettings(t *testing.T) {
	for i := range 20 {
		tp := newTapPipe(t)
		tp.open(1)
		fr := http2.NewFramer(nil, tp.client)
		first := make(chan string, 1)
		go func() {
			f, err := fr.ReadFrame()
			if err != nil {
				first <- err.Error()
				return
			}
			first <- describe(f)
			io.Copy(io.Discard, tp.client)
		}()
		started, reset := make(chan struct{}), make(chan error, 1)
		go func() {
			close(started)
			reset <- tp.tap.ResetStream(1, uint32(http2.ErrCodeCancel))
		}()
		<-started
		if err := tp.server.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		if err := <-reset; err != nil {
			t.Fatalf("round %d: ResetStream: %v", i, err)
		}
		if got := <-first; got != "SETTINGS 0" {
			t.Fatalf("round %d: the client's first frame is %s, want SETTINGS", i, got)
		}
	}
}

// A client may read the headers and reset the stream before the Write that
// carries them returns: the headers still count.
func TestWaitWrittenCountsFramesInFlightWhenStreamEnds(t *testing.T) {
	tp := newTapPipe(t) // no reader: the tap's Write blocks on the pipe
	tp.open(1)
	wrote := make(chan error, 1)
	go func() {
		tp.hbuf.Reset()
		tp.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		wrote <- tp.server.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: tp.hbuf.Bytes(), EndHeaders: true})
	}()
	if _, err := io.ReadFull(tp.client, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := tp.cfr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	tp.serverReads("RST_STREAM 1")
	ctx := context.Background()
	if err := tp.tap.WaitWritten(ctx, 1, true, 0); err != nil {
		t.Errorf("headers in flight, stream reset: %v, want nil", err)
	}
	if err := tp.tap.WaitWritten(ctx, 1, true, 1); !errors.Is(err, h2tap.ErrStreamEnded) {
		t.Errorf("data never written, stream reset: %v, want ErrStreamEnded", err)
	}
	go io.Copy(io.Discard, tp.client)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}
