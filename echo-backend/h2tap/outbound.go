// Server to client: forwarding the server's frames, and dropping those of
// streams the handler reset or that a GOAWAY cut off.

package h2tap

import (
	"fmt"
)

// Write writes what the server sends, minus frames of reset streams and,
// after GoAway, of the streams GOAWAY cut off.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.outShut {
		return len(p), nil
	}
	if c.werr != nil {
		return 0, c.werr
	}
	if c.mode.Load() == modePassthrough {
		// A server that wrote before the client's first bytes showed
		// the connection is not HTTP/2: hand over what was held back.
		if held := c.outParser.held(); len(held) > 0 {
			c.outParser = frameParser{}
			if _, err := c.Conn.Write(held); err != nil {
				return 0, err
			}
		}
		return c.Conn.Write(p)
	}
	c.events = c.events[:0]
	out, err := c.outParser.feed(c.wout[:0], p, c.outboundFrame)
	if err != nil {
		c.werr = fmt.Errorf("h2tap: connection %d: from server: %w", c.id, err)
		c.prog.shut(c.werr)
		return 0, c.werr
	}
	if cap(out) <= 1<<20 {
		c.wout = out[:0]
	}
	events := c.events
	if cap(c.events) > 1024 {
		c.events = nil // do not keep a rare huge Write's events alive
	}
	if len(out) > 0 {
		if len(events) > 0 {
			c.prog.sending(events)
		}
		_, err := c.Conn.Write(out)
		if len(events) > 0 {
			c.prog.sent(events, err == nil)
		}
		if err != nil {
			c.prog.shut(err)
			return 0, err
		}
	}
	return len(p), nil
}

// outboundFrame handles one complete server frame; c.wmu is held.
func (c *Conn) outboundFrame(out []byte, h frameHeader, payload []byte) ([]byte, error) {
	if c.outBlock.active && h.typ != frameContinuation {
		return out, fmt.Errorf("frame of type %d inside the header block of stream %d", h.typ, c.outBlock.stream)
	}
	var done bool
	var err error
	switch h.typ {
	case frameHeaders, framePushPromise:
		done, err = c.outBlock.start(h, payload)
	case frameContinuation:
		done, err = c.outBlock.add(h, payload)
	case frameSettings:
		if h.flags&flagAck == 0 {
			// The client's encoder may use any size the server allows.
			if sizes, err := headerTableSizes(payload); err == nil {
				for _, s := range sizes {
					atomicMax(&c.inTableSize, s)
				}
			}
			// ResetStream and GoAway wait for c.wmu, so their frames
			// follow this one.
			c.settingsOutOnce.Do(func() { close(c.settingsOut) })
		}
		return appendFrame(out, h, payload), nil
	case frameGoAway:
		if c.goneAway {
			// The client already has the tap's GOAWAY, whose last stream
			// id the server's must not exceed.
			return out, nil
		}
		return appendFrame(out, h, payload), nil
	case frameData:
		if !c.dropped(h.stream) {
			c.events = append(c.events, progressEvent{
				stream: h.stream,
				data:   int64(dataLen(h, payload)),
				end:    h.flags&flagEndStream != 0,
			})
			return appendFrame(out, h, payload), nil
		}
		if h.flags&flagEndStream != 0 {
			delete(c.reset, h.stream)
		}
		if len(payload) > 0 {
			// The server spent connection window on a frame the client
			// never sees; give it back.
			c.injectToServer(appendWindowUpdate(nil, 0, uint32(len(payload))))
		}
		return out, nil
	case frameRSTStream:
		if c.dropped(h.stream) {
			delete(c.reset, h.stream)
			return out, nil
		}
		c.events = append(c.events, progressEvent{stream: h.stream, end: true})
		return appendFrame(out, h, payload), nil
	default:
		if h.stream != 0 && c.dropped(h.stream) {
			return out, nil
		}
		return appendFrame(out, h, payload), nil
	}
	if err != nil || !done {
		return out, err
	}
	c.outCodec.allow(c.outTableSize.Load())
	// Decode even blocks that are dropped: the server's encoder has
	// updated its dynamic table for them.
	fields, err := c.outCodec.decode(c.outBlock.finish())
	if err != nil {
		return out, fmt.Errorf("stream %d: %w", c.outBlock.stream, err)
	}
	if c.dropped(c.outBlock.stream) {
		if c.outBlock.endStream {
			delete(c.reset, c.outBlock.stream)
		}
		return out, nil
	}
	if c.outBlock.typ == frameHeaders {
		c.events = append(c.events, progressEvent{
			stream:  c.outBlock.stream,
			headers: !informational(fields),
			end:     c.outBlock.endStream,
		})
	}
	return c.outBlock.appendFrames(out, c.outCodec.encode(fields)), nil
}

// dropped reports whether the server's frames for stream are dropped: it was
// reset, or GOAWAY cut it off; c.wmu is held.
func (c *Conn) dropped(stream uint32) bool {
	return c.reset[stream] || c.goneAway && stream > c.goAwayLast
}
