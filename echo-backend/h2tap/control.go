// What a handler can do to its connection: reset a stream or send GOAWAY.

package h2tap

import (
	"fmt"
	"net"
	"time"
)

// ResetStream sends RST_STREAM(streamID, code) to the client at the next frame
// boundary and drops every later frame the server writes for that stream.
// The stream must have been opened by the client on this connection and,
// after GoAway, be one of the streams GOAWAY lets complete.
func (c *Conn) ResetStream(streamID uint32, code uint32) error {
	if err := c.checkStream("ResetStream", streamID); err != nil {
		return err
	}
	c.awaitServerSettings()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.outShut || c.closed.Load() || c.goneAway && streamID > c.goAwayLast {
		return fmt.Errorf("h2tap: ResetStream: connection %d: %w", c.id, net.ErrClosed)
	}
	if c.reset[streamID] {
		return nil
	}
	if len(c.reset) >= maxResetStreams {
		return fmt.Errorf("h2tap: ResetStream: connection %d already has %d unfinished reset streams", c.id, len(c.reset))
	}
	if _, err := c.Conn.Write(appendRSTStream(nil, streamID, code)); err != nil {
		return fmt.Errorf("h2tap: ResetStream: writing RST_STREAM: %w", err)
	}
	c.reset[streamID] = true
	c.prog.end(streamID)
	return nil
}

// GoAway sends GOAWAY(lastStreamID, code) at the next frame boundary and
// closes the connection once the streams it lets complete have ended.
//
// As RFC 9113 (section 6.8) asks, the streams with ids up to lastStreamID
// complete: the tap keeps forwarding their frames. It drops every frame the
// server writes for a higher stream (a client retries those on another
// connection), and any GOAWAY of the server's own. Once every stream up to
// lastStreamID has ended (END_STREAM or RST_STREAM, as WaitWritten counts
// them), or 30 seconds after GoAway if some have not, the tap stops
// forwarding and closes the connection.
//
// The close is graceful where the inner connection allows it (CloseWrite:
// TCP, *tls.Conn): the client reads end of stream after the last frame, and
// the socket is closed when the server, having read the client's end of
// stream, closes the Conn, or at the latest 10 seconds later. Otherwise the
// connection is closed at once. Anything the server writes afterwards is
// dropped.
func (c *Conn) GoAway(lastStreamID uint32, code uint32) error {
	if !c.IsHTTP2() {
		return fmt.Errorf("h2tap: GoAway: connection %d is not HTTP/2", c.id)
	}
	if lastStreamID > 1<<31-1 {
		return fmt.Errorf("h2tap: GoAway: last stream id %d: want 0 to 2^31-1", lastStreamID)
	}
	c.awaitServerSettings()
	c.wmu.Lock()
	if c.goneAway || c.closed.Load() {
		c.wmu.Unlock()
		return fmt.Errorf("h2tap: GoAway: connection %d: %w", c.id, net.ErrClosed)
	}
	_, err := c.Conn.Write(appendGoAway(nil, lastStreamID, code))
	c.goneAway = true
	c.goAwayLast = lastStreamID
	c.wmu.Unlock()
	if err != nil {
		c.prog.shut(errGoneAway)
		c.Close()
		return fmt.Errorf("h2tap: GoAway: writing GOAWAY: %w", err)
	}
	drained := c.prog.goAway(lastStreamID)
	go c.closeAfterGoAway(drained, goAwayGrace)
	return nil
}

// closeAfterGoAway waits until the streams GOAWAY lets complete have ended
// (drained is closed) or grace passes, then stops forwarding and closes
// the connection, gracefully where it can.
func (c *Conn) closeAfterGoAway(drained <-chan struct{}, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	case <-c.done:
		return
	}
	// Under c.wmu, so that no frame is cut in two.
	c.wmu.Lock()
	c.outShut = true
	c.wmu.Unlock()
	c.prog.shut(errGoneAway)
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		c.Close()
		return
	}
	lt := time.AfterFunc(goAwayLinger, func() { c.Close() })
	c.linger.Store(lt)
	if c.closed.Load() {
		lt.Stop()
	}
}

// awaitServerSettings waits until the server's first SETTINGS frame was
// forwarded, the connection closes, or settingsWait passes. An HTTP/2 server
// may run a handler before its SETTINGS frame is written (x/net writes it
// from another goroutine), and a client treats a RST_STREAM or GOAWAY that
// comes first as a connection error.
func (c *Conn) awaitServerSettings() {
	select {
	case <-c.settingsOut:
		return
	default:
	}
	t := time.NewTimer(settingsWait)
	defer t.Stop()
	select {
	case <-c.settingsOut:
	case <-c.done:
	case <-t.C:
	}
}
