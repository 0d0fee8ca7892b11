// Putting the tap on a connection: a net.Conn, a TLS connection, a listener
// or grpc-go transport credentials; and finding a tapped connection again.

package h2tap

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc/credentials"
)

// Wrap taps c. It never blocks: the preface is detected on first Read.
func Wrap(c net.Conn) *Conn {
	tc := &Conn{
		Conn:     c,
		id:       nextID.Add(1),
		inParser: frameParser{streamData: true, maxPayload: maxInboundFrame},
		inCodec:  newTranscoder(),
		outParser: frameParser{
			maxPayload: maxOutboundFrame,
		},
		outCodec:    newTranscoder(),
		reset:       make(map[uint32]bool),
		settingsOut: make(chan struct{}),
		done:        make(chan struct{}),
	}
	tc.in.ready = make(chan struct{}, 1)
	tc.in.space = make(chan struct{}, 1)
	tc.inTableSize.Store(defaultTableSize)
	tc.outTableSize.Store(defaultTableSize)
	registry.Store(tc.id, tc)
	return tc
}

// TLSConn is a tapped connection that keeps the ConnectionState method of
// the connection it wraps, so that an HTTP/2 server (golang.org/x/net/http2
// ServeConn) checks the TLS version and sets Request.TLS.
type TLSConn struct {
	*Conn
	state connectionStater
}

type connectionStater interface {
	ConnectionState() tls.ConnectionState
}

// WrapTLS taps a TLS connection whose handshake is done (as in an
// http.Server TLSNextProto function) and keeps its ConnectionState.
func WrapTLS(c *tls.Conn) *TLSConn { return &TLSConn{Conn: Wrap(c), state: c} }

// ConnectionState returns the inner connection's TLS state.
func (c *TLSConn) ConnectionState() tls.ConnectionState { return c.state.ConnectionState() }

// Listener taps every connection accepted from l. A connection with a
// ConnectionState method is returned as a *TLSConn, any other as a *Conn.
func Listener(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if cs, ok := c.(connectionStater); ok {
		return &TLSConn{Conn: Wrap(c), state: cs}, nil
	}
	return Wrap(c), nil
}

// Credentials wraps gRPC transport credentials so that the connection grpc-go
// serves (after any TLS handshake) is tapped. AuthInfo is passed through.
func Credentials(inner credentials.TransportCredentials) credentials.TransportCredentials {
	return tapCreds{inner: inner}
}

// DeadlineCredentials is Credentials for a server that keeps its calls'
// deadlines itself: the tap passes grpc-timeout on only as
// GRPCTimeoutHeader, so grpc-go sets no deadline of its own. grpc-go's
// deadline would end an expired call twice at the same instant, its
// handler's status racing a RST_STREAM CANCEL from its transport's timer,
// and a client (or a proxy) would see either.
func DeadlineCredentials(inner credentials.TransportCredentials) credentials.TransportCredentials {
	return tapCreds{inner: inner, hideTimeout: true}
}

type tapCreds struct {
	inner       credentials.TransportCredentials
	hideTimeout bool
}

func (t tapCreds) ClientHandshake(ctx context.Context, authority string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return t.inner.ClientHandshake(ctx, authority, c)
}

func (t tapCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := t.inner.ServerHandshake(c)
	if err != nil {
		return nil, nil, err
	}
	tc := Wrap(conn)
	tc.hideTimeout = t.hideTimeout
	return tc, info, nil
}

func (t tapCreds) Info() credentials.ProtocolInfo { return t.inner.Info() }

func (t tapCreds) Clone() credentials.TransportCredentials {
	return tapCreds{inner: t.inner.Clone(), hideTimeout: t.hideTimeout}
}

func (t tapCreds) OverrideServerName(name string) error {
	return t.inner.OverrideServerName(name)
}

// Lookup returns the live connection with the given id.
func Lookup(connID uint64) (*Conn, bool) {
	v, ok := registry.Load(connID)
	if !ok {
		return nil, false
	}
	return v.(*Conn), true
}

// ParseStreamHeader splits a StreamHeader value. ok is false unless v is
// "<connID>/<streamID>" with decimal ids, a connection id above zero and a
// stream id between 1 and 2^31-1.
func ParseStreamHeader(v string) (connID uint64, streamID uint32, ok bool) {
	a, b, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	conn, err := strconv.ParseUint(a, 10, 64)
	if err != nil || conn == 0 {
		return 0, 0, false
	}
	stream, err := strconv.ParseUint(b, 10, 31)
	if err != nil || stream == 0 {
		return 0, 0, false
	}
	return conn, uint32(stream), true
}
