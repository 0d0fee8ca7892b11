// Package h2test drives an HTTP/2 connection frame by frame for tests that
// must see what a ready-made client hides, such as the code and last stream
// of a GOAWAY that excludes the request.
package h2test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Timeout bounds all I/O on a connection made by Dial, so that a test
// whose server never answers fails instead of hanging.
const Timeout = 30 * time.Second

// Conn is a client's end of a prior-knowledge (h2c) HTTP/2 connection on
// which the test writes exactly the frames it chooses.
type Conn struct {
	// Framer reads and writes the connection's frames. HEADERS and their
	// CONTINUATIONs arrive decoded, as one *http2.MetaHeadersFrame.
	Framer *http2.Framer

	t   testing.TB
	buf bytes.Buffer
	enc *hpack.Encoder
}

// Dial connects to addr, sends the client preface and an empty SETTINGS
// frame, and returns the connection; it is closed when the test ends. Any
// failure ends the test.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("h2test: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := nc.SetDeadline(time.Now().Add(Timeout)); err != nil {
		t.Fatalf("h2test: setting the I/O deadline: %v", err)
	}
	c := &Conn{Framer: http2.NewFramer(nc, nc), t: t}
	c.Framer.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.buf)
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatalf("h2test: writing the client preface: %v", err)
	}
	if err := c.Framer.WriteSettings(); err != nil {
		t.Fatalf("h2test: writing SETTINGS: %v", err)
	}
	return c
}

// WriteHeaders writes fields, given as name, value pairs in order and
// pseudo-headers first, as one HEADERS frame on stream id; endStream ends
// the stream with it. Any failure ends the test.
func (c *Conn) WriteHeaders(id uint32, endStream bool, fields ...string) {
	c.t.Helper()
	if len(fields)%2 != 0 {
		c.t.Fatalf("h2test: WriteHeaders: %d fields, want name, value pairs", len(fields))
	}
	c.buf.Reset()
	for i := 0; i < len(fields); i += 2 {
		if err := c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
			c.t.Fatalf("h2test: encoding %s: %v", fields[i], err)
		}
	}
	p := http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndHeaders: true, EndStream: endStream}
	if err := c.Framer.WriteHeaders(p); err != nil {
		c.t.Fatalf("h2test: writing HEADERS on stream %d: %v", id, err)
	}
}

// WriteData writes data as one DATA frame on stream id; endStream ends the
// stream with it. Any failure ends the test.
func (c *Conn) WriteData(id uint32, endStream bool, data []byte) {
	c.t.Helper()
	if err := c.Framer.WriteData(id, endStream, data); err != nil {
		c.t.Fatalf("h2test: writing DATA on stream %d: %v", id, err)
	}
}

// ReadGoAway reads frames, acknowledging the server's SETTINGS, until a
// GOAWAY, and returns it (valid until the next read of the connection). It
// returns an error instead if the connection ends first, or if a stream
// gets response headers or a reset before it.
func (c *Conn) ReadGoAway() (*http2.GoAwayFrame, error) {
	for {
		f, err := c.Framer.ReadFrame()
		if err != nil {
			return nil, fmt.Errorf("reading frames: %w", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := c.Framer.WriteSettingsAck(); err != nil {
					return nil, fmt.Errorf("acknowledging SETTINGS: %w", err)
				}
			}
		case *http2.GoAwayFrame:
			return f, nil
		case *http2.MetaHeadersFrame:
			return nil, fmt.Errorf("stream %d got response headers (status %s)", f.StreamID, f.PseudoValue("status"))
		case *http2.RSTStreamFrame:
			return nil, fmt.Errorf("stream %d was reset with %v", f.StreamID, f.ErrCode)
		}
	}
}
