package cluster

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	grpcutil "sigs.k8s.io/gateway-api/conformance/utils/grpc"
	"sigs.k8s.io/gateway-api/conformance/utils/tlog"

	"github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
)

// maxGRPCConns bounds the connections a GRPCClient keeps open; past it the
// least recently used one is closed.
const maxGRPCConns = 32

// GRPCClient returns a client for upstream's gRPC conformance helpers that
// dials through DialContext. It sends what upstream's DefaultClient sends,
// over plaintext HTTP/2, with one difference that sharing one client across
// tests needs: connections are kept per (address, authority), not one for
// the client's life, so a request with another :authority gets it. It is
// safe for concurrent SendRPC calls. The caller may close it; Close of the
// cluster closes it too, so that a runner that forgets leaves no
// connections (and their goroutines) behind.
func (c *Cluster) GRPCClient() grpcutil.Client {
	g := &grpcClient{
		dial:  func(ctx context.Context, addr string) (net.Conn, error) { return c.DialContext(ctx, "tcp", addr) },
		conns: map[grpcTarget]*grpcConn{},
	}
	c.clientsMu.Lock()
	c.grpcClients = append(c.grpcClients, g)
	c.clientsMu.Unlock()
	return g
}

type grpcTarget struct{ address, authority string }

type grpcConn struct {
	cc       *grpc.ClientConn
	lastUsed uint64
}

type grpcClient struct {
	dial func(context.Context, string) (net.Conn, error)

	mu     sync.Mutex
	conns  map[grpcTarget]*grpcConn
	uses   uint64
	closed bool
}

// conn returns the connection for target, opening it if needed.
func (g *grpcClient) conn(target grpcTarget) (*grpc.ClientConn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errors.New("cluster: gRPC client used after Close")
	}
	g.uses++
	if c := g.conns[target]; c != nil {
		c.lastUsed = g.uses
		return c.cc, nil
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(g.dial),
	}
	if target.authority != "" {
		opts = append(opts, grpc.WithAuthority(target.authority))
	}
	cc, err := grpc.NewClient("passthrough:///"+target.address, opts...)
	if err != nil {
		return nil, err
	}
	if len(g.conns) >= maxGRPCConns {
		var oldest grpcTarget
		var least uint64 = ^uint64(0)
		for t, c := range g.conns {
			if c.lastUsed < least {
				oldest, least = t, c.lastUsed
			}
		}
		g.conns[oldest].cc.Close()
		delete(g.conns, oldest)
	}
	g.conns[target] = &grpcConn{cc: cc, lastUsed: g.uses}
	return cc, nil
}

// drop closes the connection of target if it is still cc.
func (g *grpcClient) drop(target grpcTarget, cc *grpc.ClientConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.conns[target]; c != nil && c.cc == cc {
		cc.Close()
		delete(g.conns, target)
	}
}

// SendRPC implements upstream's grpc.Client: it calls the method expected
// names with its request and metadata and returns the status code, headers,
// trailers and response. Only a failure to build the connection is an
// error; a non-OK status is a Response. An Internal status drops the
// connection, so the next call dials afresh.
func (g *grpcClient) SendRPC(t *testing.T, address string, expected grpcutil.ExpectedResponse, timeout time.Duration) (*grpcutil.Response, error) {
	t.Helper()
	target := grpcTarget{address: address}
	if md := expected.RequestMetadata; md != nil {
		target.authority = md.Authority
	}
	cc, err := g.conn(target)
	if err != nil {
		return &grpcutil.Response{}, err
	}
	resp := &grpcutil.Response{Headers: &metadata.MD{}, Trailers: &metadata.MD{}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if md := expected.RequestMetadata; md != nil && len(md.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(md.Metadata))
	}
	// The call goes through Invoke with upstream's request and response
	// types, taken from the fields of grpcutil's types rather than named:
	// their package moved between Gateway API releases (conformance/
	// echo-basic in v1.6, gateway-api-conformance-images from v1.7).
	var method string
	var req any
	switch {
	case expected.EchoRequest != nil:
		method, req = grpcechopb.UpstreamEchoMethod, expected.EchoRequest
	case expected.EchoTwoRequest != nil:
		method, req = grpcechopb.UpstreamEchoTwoMethod, expected.EchoTwoRequest
	case expected.EchoThreeRequest != nil:
		method, req = grpcechopb.UpstreamEchoThreeMethod, expected.EchoThreeRequest
	default:
		return resp, errors.New("cluster: ExpectedResponse has no request: set one of EchoRequest, EchoTwoRequest or EchoThreeRequest")
	}
	reply := newOf(resp.Response)
	tlog.Logf(t, "Sending RPC %s to %s (authority %q)", method, address, target.authority)
	err = cc.Invoke(ctx, method, req, reply, grpc.Header(resp.Headers), grpc.Trailer(resp.Trailers))
	if err == nil {
		resp.Response = reply
	}
	if err != nil {
		resp.Code = status.Code(err)
		tlog.Logf(t, "RPC ended with %v", err)
		if resp.Code == codes.Internal {
			g.drop(target, cc)
		}
		return resp, nil
	}
	resp.Code = codes.OK
	tlog.Logf(t, "RPC returned %v", resp.Response)
	return resp, nil
}

// Close closes every connection. Later SendRPC calls fail.
func (g *grpcClient) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for t, c := range g.conns {
		c.cc.Close()
		delete(g.conns, t)
	}
}

// newOf returns a new T for a field of type *T.
func newOf[T any](*T) *T { return new(T) }
