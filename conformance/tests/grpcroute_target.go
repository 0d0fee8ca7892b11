package tests

// The Gateway the GRPCRoute timeout tests (GEP-3139) call through: a
// gRPC client for the routes it serves, the request ids the backend's
// ledger is keyed by, and reads of that ledger through the Gateway.
// grpcroute_calls.go holds the calls themselves.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
)

// grpcEchoService is the full name of the echo-backend's echo service,
// which the tests' routes send to their backend.
const grpcEchoService = "gatewitness.echo.v1.Echo"

// grpcTarget is a Gateway that serves a test's GRPCRoutes, with the
// clients that reach it.
type grpcTarget struct {
	s    *suite.ConformanceTestSuite
	addr string // the Gateway's address, host:port
	dial DialFunc
	raw  *http.Client
}

// newGRPCTarget waits until the shared Gateway (same-namespace in the
// infrastructure namespace) and the named GRPCRoutes are accepted, and
// returns the Gateway as a target.
func newGRPCTarget(t *testing.T, s *suite.ConformanceTestSuite, routes ...string) *grpcTarget {
	t.Helper()
	ns := suite.InfrastructureNamespace
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: ns, Name: r}
	}
	gw := kubernetes.NewGatewayRef(types.NamespacedName{Namespace: ns, Name: "same-namespace"})
	addr := kubernetes.GatewayAndRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName, gw, &gwv1.GRPCRoute{}, true, nns...)
	dial := DialContext(s)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p, DialContext: dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &grpcTarget{
		s:    s,
		addr: addr,
		dial: dial,
		// A safety net only: every call has a shorter bound of its own.
		raw: &http.Client{Transport: tr, Timeout: time.Minute},
	}
}

// conn returns a gRPC connection to the Gateway that sends authority as
// :authority, closed when t ends.
func (g *grpcTarget) conn(t *testing.T, authority string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+g.addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(authority),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return g.dial(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		t.Fatalf("gRPC connection to the Gateway %s for %s: %v", g.addr, authority, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// waitReady calls Echo.Unary through cc until the suite's
// RequiredConsecutiveSuccesses calls in a row succeed, so that the route of
// cc's authority is programmed before a test times anything. It fails t
// after the suite's MaxTimeToConsistency.
func (g *grpcTarget) waitReady(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	client := echopb.NewEchoClient(cc)
	need := max(g.s.TimeoutConfig.RequiredConsecutiveSuccesses, 1)
	deadline := time.Now().Add(g.s.TimeoutConfig.MaxTimeToConsistency)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	ok := 0
	var last error
	for ok < need {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = client.Unary(ctx, &echopb.EchoRequest{})
		cancel()
		if last == nil {
			ok++
			continue
		}
		ok = 0
		if time.Now().After(deadline) {
			t.Fatalf("%s through the Gateway %s: no %d successful calls in a row within %v; last: %v",
				cc.CanonicalTarget(), g.addr, need, g.s.TimeoutConfig.MaxTimeToConsistency, last)
		}
		<-tick.C // polling interval, not synchronisation
	}
}

var grpcRequestSeq atomic.Int64

// grpcRequestID returns a request id for the backend's ledger that no other
// call of any run shares: the test's name, a counter and random bits.
func grpcRequestID(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, t.Name())
	return fmt.Sprintf("%s-%d-%s", name, grpcRequestSeq.Add(1), hex.EncodeToString(b[:]))
}

// grpcLedgerEntry reads the backend's ledger of request id through the
// Gateway (the echo-backend's Admin.GetLedger, routed to the same single
// replica as the calls). ok is false when the backend has no entry for id.
func grpcLedgerEntry(t *testing.T, cc *grpc.ClientConn, id string) (e *echopb.LedgerEntry, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := echopb.NewAdminClient(cc).GetLedger(ctx, &echopb.GetLedgerRequest{Id: id})
	if status.Code(err) == codes.NotFound {
		return nil, false
	}
	if err != nil {
		t.Fatalf("reading the backend's ledger of %s through the Gateway: %v", id, err)
	}
	return e, true
}

// grpcWaitAttemptEnded polls the backend's ledger until the only attempt of id
// has ended, for at most within, and returns it. It fails t if the backend
// saw no attempt, more than one, or one that did not end in time.
func grpcWaitAttemptEnded(t *testing.T, cc *grpc.ClientConn, id string, within time.Duration) *echopb.Attempt {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		e, ok := grpcLedgerEntry(t, cc, id)
		if ok && len(e.GetAttempts()) > 1 {
			t.Fatalf("the backend saw %d attempts of %s, want 1: %v", len(e.GetAttempts()), id, e)
		}
		if ok && len(e.GetAttempts()) == 1 && e.GetAttempts()[0].GetEnded() != nil {
			return e.GetAttempts()[0]
		}
		if time.Now().After(deadline) {
			if !ok {
				t.Fatalf("the backend has no record of %s", id)
			}
			t.Fatalf("the backend's attempt of %s had not ended %v after the call: %v", id, within, e)
		}
		<-tick.C // polling interval, not synchronisation
	}
}
