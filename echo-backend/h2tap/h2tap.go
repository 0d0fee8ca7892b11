// Package h2tap wraps server-side HTTP/2 connections so that a handler can
// act on its own stream at the frame level: reset it with a chosen
// RST_STREAM error code, or send GOAWAY, which net/http and grpc-go do not
// let a handler do. It also tells each handler its connection and stream id.
//
// The tap decodes each request header block and re-encodes it with one extra
// header, StreamHeader, whose value is "<connID>/<streamID>"; a handler looks
// its Conn up with Lookup(connID). A connection that does not start with the
// HTTP/2 client preface (HTTP/1.1, h2c upgrade) passes through untouched.
package h2tap

import (
	"net"

	"google.golang.org/grpc/credentials"
)

// StreamHeader is the request header the tap adds to every HTTP/2 request:
// "<connID>/<streamID>". Any copy sent by the client is removed.
const StreamHeader = "gatecheck-h2-stream"

// Conn is a tapped server-side connection.
type Conn struct {
	net.Conn
}

// Wrap taps c. It never blocks: the preface is detected on first Read.
func Wrap(c net.Conn) *Conn { panic("h2tap.Wrap: not implemented yet") }

// Listener taps every connection accepted from l.
func Listener(l net.Listener) net.Listener { panic("h2tap.Listener: not implemented yet") }

// Credentials wraps gRPC transport credentials so that the connection grpc-go
// serves (after any TLS handshake) is tapped. AuthInfo is passed through.
func Credentials(inner credentials.TransportCredentials) credentials.TransportCredentials {
	panic("h2tap.Credentials: not implemented yet")
}

// Lookup returns the live connection with the given id.
func Lookup(connID uint64) (*Conn, bool) { panic("not implemented yet") }

// ParseStreamHeader splits a StreamHeader value.
func ParseStreamHeader(v string) (connID uint64, streamID uint32, ok bool) {
	panic("not implemented yet")
}

// ID is the connection's process-unique id.
func (c *Conn) ID() uint64 { panic("not implemented yet") }

// IsHTTP2 reports whether the connection started with the HTTP/2 preface.
// It is only meaningful after the first request was read.
func (c *Conn) IsHTTP2() bool { panic("not implemented yet") }

// ResetStream sends RST_STREAM(streamID, code) to the client at the next frame
// boundary and drops every later frame the server writes for that stream.
func (c *Conn) ResetStream(streamID uint32, code uint32) error { panic("not implemented yet") }

// GoAway sends GOAWAY(lastStreamID, code) at the next frame boundary, then
// closes the connection once it is written.
func (c *Conn) GoAway(lastStreamID uint32, code uint32) error { panic("not implemented yet") }
