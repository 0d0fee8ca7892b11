package runner

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpcutil "sigs.k8s.io/gateway-api/conformance/utils/grpc"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestFreshConnGRPCDialsEachCall checks that every RPC of the cluster
// path's gRPC client opens a connection of its own, so that upstream's
// answers in a row cross a data plane's replicas. The server implements
// no service: every call ends Unimplemented, which is all it needs.
func TestFreshConnGRPCDialsEachCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := grpc.NewServer()
	go srv.Serve(cl) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)

	var c grpcutil.Client = freshConnGRPC{}
	defer c.Close()
	var exp grpcutil.ExpectedResponse
	exp.EchoRequest = newOf(exp.EchoRequest)
	const calls = 3
	for range calls {
		if _, err := c.SendRPC(t, ln.Addr().String(), exp, 10*time.Second); err != nil {
			t.Logf("SendRPC: %v", err)
		}
	}
	if got := cl.accepted.Load(); got != calls {
		t.Errorf("%d RPCs over %d connections; want a connection each", calls, got)
	}
}

// newOf returns a new T for a *T of upstream's generated code, whose
// import path differs between Gateway API releases.
func newOf[T any](*T) *T { return new(T) }
