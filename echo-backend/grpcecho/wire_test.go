package grpcecho

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// frame encodes one HTTP/2 frame with a zero payload of n bytes.
func frame(typ, flags uint8, stream uint32, n int) []byte {
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags,
		byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
	return append(b, make([]byte, n)...)
}

// newTestWire returns a wireConn over one end of a pipe whose other end is
// drained.
func newTestWire(t *testing.T) *wireConn {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, b)
	}()
	w := &wireConn{Conn: a, id: 1, conns: new(sync.Map), streams: make(map[uint32]streamWire), changed: make(chan struct{})}
	w.conns.Store(w.id, w)
	t.Cleanup(func() {
		w.Close()
		b.Close()
		<-done
	})
	return w
}

func (w *wireConn) state(stream uint32) streamWire {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streams[stream]
}

func TestWireCountsFramesSplitAcrossWrites(t *testing.T) {
	w := newTestWire(t)
	var all []byte
	all = append(all, frame(0x4, 0, 0, 6)...)             // SETTINGS on stream 0
	all = append(all, frame(frameHeaders, 0x4, 3, 20)...) // HEADERS
	all = append(all, frame(frameData, 0, 3, 100)...)     // DATA
	all = append(all, frame(frameData, 0, 5, 7)...)       // another stream
	all = append(all, frame(frameData, 0, 3, 0)...)       // empty DATA
	// Write one byte at a time, so that every frame header and payload is
	// split.
	for i := range all {
		if _, err := w.Write(all[i : i+1]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		// Nothing counts before the frame's last byte is written.
		if i == 9+6+9+20+9+99-1 && w.state(3).dataBytes != 0 {
			t.Fatalf("DATA counted before its last byte was written")
		}
	}
	if got := w.state(3); got.headers != 1 || got.dataBytes != 100 {
		t.Errorf("stream 3 = %+v, want 1 HEADERS and 100 DATA bytes", got)
	}
	if got := w.state(5); got.dataBytes != 7 {
		t.Errorf("stream 5 = %+v, want 7 DATA bytes", got)
	}
	// Trailers end stream 3 and forget it; RST_STREAM forgets stream 5.
	if _, err := w.Write(append(frame(frameHeaders, 0x5, 3, 4), frame(frameRSTStream, 0, 5, 4)...)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	w.mu.Lock()
	n := len(w.streams)
	w.mu.Unlock()
	if n != 0 {
		t.Errorf("%d streams kept after they ended", n)
	}
}

func TestWireWait(t *testing.T) {
	w := newTestWire(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- w.wait(ctx, 7, dataWritten) }()
	if _, err := w.Write(frame(frameHeaders, 0x4, 7, 3)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	select {
	case err := <-got:
		t.Fatalf("wait returned %v after HEADERS only", err)
	default:
	}
	if _, err := w.Write(frame(frameData, 0, 7, 12)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("wait: %v", err)
	}

	// A wait ends when the context ends or the connection closes.
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if err := w.wait(short, 9, dataWritten); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a cancelled context: %v", err)
	}
	go func() { got <- w.wait(ctx, 9, dataWritten) }()
	w.Close()
	if err := <-got; !errors.Is(err, errConnClosed) {
		t.Errorf("wait on a closed connection: %v", err)
	}
	if _, ok := w.conns.Load(w.id); ok {
		t.Errorf("closed connection still registered")
	}
}

func BenchmarkWireWrite(b *testing.B) {
	w := &wireConn{Conn: discardConn{}, streams: make(map[uint32]streamWire), changed: make(chan struct{})}
	var buf []byte
	for s := uint32(1); s < 64; s += 2 {
		buf = append(buf, frame(frameHeaders, 0x4, s, 30)...)
		buf = append(buf, frame(frameData, 0, s, 1000)...)
	}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// discardConn is a net.Conn whose writes go nowhere.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }

// Once the call's context is done, frames being passed on count as written:
// the peer may have them already.
func TestWireWaitCountsFramesInFlightOnceDone(t *testing.T) {
	a, b := net.Pipe() // unbuffered: a Write blocks until b reads
	defer a.Close()
	defer b.Close()
	w := &wireConn{Conn: a, id: 2, conns: new(sync.Map), streams: make(map[uint32]streamWire), changed: make(chan struct{})}

	hdr := frame(frameHeaders, 0x4, 11, 5)
	wrote := make(chan error, 1)
	go func() {
		_, err := w.Write(hdr)
		wrote <- err
	}()
	// The Write has started once its first byte can be read.
	first := make([]byte, 1)
	if _, err := io.ReadFull(b, first); err != nil {
		t.Fatalf("read: %v", err)
	}
	live, cancelLive := context.WithCancel(context.Background())
	cancelLive()
	if err := w.wait(live, 11, headersWritten); err != nil {
		t.Errorf("wait after the context ended, HEADERS in flight: %v, want nil", err)
	}
	if err := w.wait(live, 11, dataWritten); !errors.Is(err, context.Canceled) {
		t.Errorf("wait for DATA never written: %v, want context.Canceled", err)
	}
	if _, err := io.ReadFull(b, make([]byte, len(hdr)-1)); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if got := w.state(11); got.headers != 1 {
		t.Errorf("stream 11 = %+v after the Write, want 1 HEADERS", got)
	}
}
