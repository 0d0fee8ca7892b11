package httpecho

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// connInfo is what ConnContext stores for one accepted connection.
type connInfo struct {
	id       uint64       // process-unique
	label    string       // the ledger's name for the connection: "c<id> <peer>"
	requests atomic.Int64 // requests seen so far on this connection
}

type connKey struct{}

var nextConnID atomic.Uint64

// ConnContext must be set as http.Server.ConnContext (NewServer does) so the
// handler knows each request's connection: it gives the connection a
// process-unique id, which the ledger shows as "c<id> <peer>", and counts the
// requests seen on it (the ledger's connRequest). HTTP/2 streams of one
// connection share its id; the tap's stream header says which stream.
//
// Without it the handler still works, but the ledger shows the connection as
// "c0 <peer>" and every connRequest as 0.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	// The label is built here, once per connection, rather than for each
	// request that carries an id.
	id := nextConnID.Add(1)
	ci := &connInfo{id: id, label: "c" + strconv.FormatUint(id, 10) + " " + c.RemoteAddr().String()}
	return context.WithValue(ctx, connKey{}, ci)
}

func connFrom(ctx context.Context) *connInfo {
	ci, _ := ctx.Value(connKey{}).(*connInfo)
	return ci
}

// tcpConnOf finds the TCP connection under c, through TLS and the tap.
func tcpConnOf(c net.Conn) *net.TCPConn {
	for range 8 { // a few layers at most; no cycle can hang us
		switch x := c.(type) {
		case *net.TCPConn:
			return x
		case *h2tap.Conn:
			c = x.Conn
		case *tls.Conn:
			c = x.NetConn()
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// rawConnOf is the connection under any TLS layer, so that closing it skips
// the TLS close_notify alert.
func rawConnOf(c net.Conn) net.Conn {
	if tc := tcpConnOf(c); tc != nil {
		return tc
	}
	return c
}
