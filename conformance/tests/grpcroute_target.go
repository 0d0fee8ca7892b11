package tests

// The Gateway the GRPCRoute timeout tests (GEP-3139) call through: a
// gRPC client for the routes it serves, the request ids the backend's
// ledger is keyed by, and reads of that ledger through the Gateway.
// grpcroute_calls.go holds the calls themselves.

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
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
	// routes are the GRPCRoutes the target waited for; start and
	// accepted when it began and saw them accepted (evidence.go).
	routes      []string
	seen        statusSeen
	mu          sync.Mutex
	authorities map[*grpc.ClientConn]string // conn's :authority
	retired     bool                        // the routes' deletion is registered
}

// newGRPCTarget waits until the shared Gateway (same-namespace in the
// infrastructure namespace) and the named GRPCRoutes are accepted, and
// returns the Gateway as a target.
func newGRPCTarget(t *testing.T, s *suite.ConformanceTestSuite, routes ...string) *grpcTarget {
	t.Helper()
	start := time.Now()
	ns := suite.InfrastructureNamespace
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: ns, Name: r}
	}
	seen := statusSeen{start: start, programmed: gatewayProgrammed(t, s, types.NamespacedName{Namespace: ns, Name: "same-namespace"})}
	gw := kubernetes.NewGatewayRef(types.NamespacedName{Namespace: ns, Name: "same-namespace"})
	addr := kubernetes.GatewayAndRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName, gw, &gwv1.GRPCRoute{}, true, nns...)
	seen.accepted = time.Now()
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
		raw:         &http.Client{Transport: tr, Timeout: time.Minute},
		routes:      routes,
		seen:        seen,
		authorities: map[*grpc.ClientConn]string{},
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
	g.mu.Lock()
	g.authorities[cc] = authority
	g.mu.Unlock()
	return cc
}

// waitReady waits until Echo.Unary with cc's authority is answered by an
// echo-backend servedInARow times in a row, each call on a connection of
// its own (evidence.go), so that every replica of the data plane serves
// the route of cc's authority before a test times anything; cc itself
// is then one connection to one of them. When the test's windows end,
// the target's routes are deleted first and its clean-up waits until the
// authority is no longer served (retire). It fails t after the suite's
// MaxTimeToConsistency.
func (g *grpcTarget) waitReady(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	g.mu.Lock()
	authority, ok := g.authorities[cc]
	del := !g.retired
	g.retired = true
	g.mu.Unlock()
	if !ok {
		t.Fatalf("waitReady: a connection that grpcTarget.conn did not make")
	}
	chk := grpcCheck(g, authority, "")
	names := routeNames("GRPCRoute", g.routes)
	served(t, g.s, chk, names, g.seen)
	var deletion func() error
	if del {
		deletion = deleteRoutes(g.s, newGRPCRoute, g.routes...)
	}
	retire(t, g.s, chk, names, deletion)
}

// grpcWaitAttemptEnded polls the backend's ledger until the only attempt of id
// has ended, for at most within, and returns it. It fails t if the backend
// saw no attempt, more than one, or one that did not end in time.
func grpcWaitAttemptEnded(t *testing.T, cc *grpc.ClientConn, id string, within time.Duration) *echopb.Attempt {
	t.Helper()
	var e *echopb.LedgerEntry
	var ok bool
	ended := testclient.Poll(within, 20*time.Millisecond, func() bool {
		e, ok = testclient.GRPCLedger(t, cc, id)
		if ok && len(e.GetAttempts()) > 1 {
			t.Fatalf("the backend saw %d attempts of %s, want 1: %v", len(e.GetAttempts()), id, e)
		}
		return ok && len(e.GetAttempts()) == 1 && e.GetAttempts()[0].GetEnded() != nil
	})
	switch {
	case !ok:
		t.Fatalf("%s", testclient.NotReached(id))
	case !ended:
		t.Fatalf("the backend's attempt of %s had not ended %v after the call: %v", id, within, e)
	}
	return e.GetAttempts()[0]
}
