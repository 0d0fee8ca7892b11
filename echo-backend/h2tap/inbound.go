// Client to server: detecting HTTP/2, splitting the client's bytes into
// frames and tagging every request header block with its stream.

package h2tap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"
)

// Read reads what the client sent, with request header blocks rewritten.
func (c *Conn) Read(p []byte) (int, error) {
	switch c.mode.Load() {
	case modeHTTP2:
		return c.readHTTP2(p)
	case modePassthrough:
		if len(c.pending) > 0 {
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			return n, nil
		}
		return c.Conn.Read(p)
	}
	return c.readDetect(p)
}

// readDetect reads until the bytes either differ from the client preface or
// are all of it, then switches mode.
func (c *Conn) readDetect(p []byte) (int, error) {
	for {
		k := len(c.detect)
		if string(c.detect) != clientPreface[:k] {
			c.pending = c.detect
			c.mode.Store(modePassthrough)
			return c.Read(p)
		}
		if k == len(clientPreface) {
			c.startHTTP2()
			return c.readHTTP2(p)
		}
		n, err := c.Conn.Read(c.detectBuf[k:])
		c.detect = c.detectBuf[:k+n]
		if err != nil && string(c.detect) == clientPreface[:len(c.detect)] {
			var ne net.Error
			if len(c.detect) == 0 || (errors.As(err, &ne) && ne.Timeout()) {
				return 0, err // undecided; the caller may retry
			}
			// The connection ended inside the preface: not HTTP/2.
			c.pending = c.detect
			c.mode.Store(modePassthrough)
			return c.Read(p)
		}
	}
}

// startHTTP2 hands the client's side of the connection to the pump.
func (c *Conn) startHTTP2() {
	c.in.mu.Lock()
	c.mode.Store(modeHTTP2)
	c.in.pumping = true
	// From now on the tap enforces read deadlines itself: the pump's reads
	// from the socket must not time out.
	c.Conn.SetReadDeadline(time.Time{})
	c.in.buf = append(c.in.buf, clientPreface...)
	c.in.boundary = true
	c.in.buf = append(c.in.buf, c.in.inject...)
	c.in.inject = nil
	c.in.mu.Unlock()
	go c.pump()
}

func (c *Conn) readHTTP2(p []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.in.mu.Lock()
		if c.in.closed {
			c.in.mu.Unlock()
			return 0, net.ErrClosed
		}
		if c.in.off < len(c.in.buf) {
			n := copy(p, c.in.buf[c.in.off:])
			c.in.off += n
			if c.in.off == len(c.in.buf) {
				c.in.buf, c.in.off = c.in.buf[:0], 0
			}
			c.in.mu.Unlock()
			poke(c.in.space)
			return n, nil
		}
		if err := c.in.err; err != nil {
			c.in.mu.Unlock()
			return 0, err
		}
		dl := c.in.deadline
		c.in.mu.Unlock()

		var expired <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		select {
		case <-c.in.ready:
		case <-expired:
		}
	}
}

// pump reads the client's bytes, rewrites header blocks and queues the
// result for Read. It stops when the socket fails or the Conn is closed.
func (c *Conn) pump() {
	buf := make([]byte, 32<<10)
	var out []byte
	for {
		n, err := c.Conn.Read(buf)
		if n > 0 {
			var perr error
			out, perr = c.inParser.feed(out[:0], buf[:n], c.inboundFrame)
			if !c.push(out, c.inParser.atBoundary()) {
				return
			}
			if perr != nil {
				c.fail(fmt.Errorf("h2tap: connection %d: from client: %w", c.id, perr))
				return
			}
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// push queues b for Read, waiting while too much is queued. It reports
// false once the Conn is closed.
func (c *Conn) push(b []byte, boundary bool) bool {
	c.in.mu.Lock()
	for len(c.in.buf)-c.in.off > inboundBuffered && !c.in.closed {
		c.in.mu.Unlock()
		<-c.in.space
		c.in.mu.Lock()
	}
	if c.in.closed {
		c.in.mu.Unlock()
		return false
	}
	if c.in.off > 0 && c.in.off >= cap(c.in.buf)/2 {
		n := copy(c.in.buf, c.in.buf[c.in.off:])
		c.in.buf, c.in.off = c.in.buf[:n], 0
	}
	c.in.buf = append(c.in.buf, b...)
	c.in.boundary = boundary
	if boundary && len(c.in.inject) > 0 {
		c.in.buf = append(c.in.buf, c.in.inject...)
		c.in.inject = c.in.inject[:0]
	}
	c.in.mu.Unlock()
	poke(c.in.ready)
	return true
}

// fail ends the client-to-server direction with err, after what is queued.
func (c *Conn) fail(err error) {
	c.in.mu.Lock()
	if c.in.err == nil {
		c.in.err = err
	}
	c.in.mu.Unlock()
	poke(c.in.ready)
}

// injectToServer queues a frame for the server as if the client had sent
// it, at the next frame boundary of the client's stream.
func (c *Conn) injectToServer(frame []byte) {
	c.in.mu.Lock()
	if c.in.boundary {
		c.in.buf = append(c.in.buf, frame...)
	} else {
		c.in.inject = append(c.in.inject, frame...)
	}
	c.in.mu.Unlock()
	poke(c.in.ready)
}

// inboundFrame handles one complete client frame (DATA is streamed by the
// parser and never comes here).
func (c *Conn) inboundFrame(out []byte, h frameHeader, payload []byte) ([]byte, error) {
	if c.inBlock.active && h.typ != frameContinuation {
		return out, fmt.Errorf("frame of type %d inside the header block of stream %d", h.typ, c.inBlock.stream)
	}
	var done bool
	var err error
	switch h.typ {
	case frameHeaders:
		if h.stream > c.maxStream.Load() {
			// Track the stream before WaitWritten may accept its id.
			c.prog.open(h.stream)
			c.maxStream.Store(h.stream)
		}
		done, err = c.inBlock.start(h, payload)
	case frameContinuation:
		done, err = c.inBlock.add(h, payload)
	case framePushPromise:
		return out, errors.New("client sent PUSH_PROMISE")
	case frameSettings:
		if h.flags&flagAck == 0 {
			// The server's encoder may use any size the client allows.
			if sizes, err := headerTableSizes(payload); err == nil {
				for _, s := range sizes {
					atomicMax(&c.outTableSize, s)
				}
			}
		}
		return appendFrame(out, h, payload), nil
	case frameRSTStream:
		c.prog.end(h.stream)
		return appendFrame(out, h, payload), nil
	default:
		return appendFrame(out, h, payload), nil
	}
	if err != nil || !done {
		return out, err
	}
	c.inCodec.allow(c.inTableSize.Load())
	fields, err := c.inCodec.decode(c.inBlock.finish())
	if err != nil {
		return out, fmt.Errorf("stream %d: %w", c.inBlock.stream, err)
	}
	c.fields = tagFields(c.fields[:0], fields, c.id, c.inBlock.stream, c.hideTimeout)
	return c.inBlock.appendFrames(out, c.inCodec.encode(c.fields)), nil
}

// tagFields appends fields to dst without client copies of the tap's
// headers, then the tap's headers. hideTimeout leaves grpc-timeout out, so
// that only GRPCTimeoutHeader carries it.
func tagFields(dst, fields []hpack.HeaderField, connID uint64, stream uint32, hideTimeout bool) []hpack.HeaderField {
	timeout, hasTimeout := "", false
	for _, f := range fields {
		switch {
		case strings.EqualFold(f.Name, StreamHeader), strings.EqualFold(f.Name, GRPCTimeoutHeader):
			continue
		case f.Name == "grpc-timeout":
			if !hasTimeout {
				timeout, hasTimeout = f.Value, true
			}
			if hideTimeout {
				continue
			}
		}
		dst = append(dst, f)
	}
	v := strconv.FormatUint(connID, 10) + "/" + strconv.FormatUint(uint64(stream), 10)
	dst = append(dst, hpack.HeaderField{Name: StreamHeader, Value: v})
	if hasTimeout {
		dst = append(dst, hpack.HeaderField{Name: GRPCTimeoutHeader, Value: timeout})
	}
	return dst
}
