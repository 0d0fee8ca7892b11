package grpcecho_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

// tolerance is how late a timed event may be on this loaded machine.
const tolerance = 5 * time.Second

// testPod is the pod context every test server echoes.
var testPod = podinfo.Info{Namespace: "gatewitness-infra", Ingress: "gw", Service: "echo", Pod: "echo-7f9c-abcde"}

// backend is a running server and a client connected to it.
type backend struct {
	addr      string
	authority string // what the client sends as :authority
	ledger    *ledger.Ledger
	controls  *control.Controls
	conn      *grpc.ClientConn
	echo      echopb.EchoClient
	admin     echopb.AdminClient
	tls       bool
}

// startBackend serves NewServer on a loopback port, plaintext or TLS, and
// connects a client to it. Everything stops when the test ends.
func startBackend(t *testing.T, useTLS bool) *backend {
	t.Helper()
	b := &backend{ledger: ledger.New(ledger.Options{}), controls: control.New(), tls: useTLS}
	t.Cleanup(b.ledger.Close)
	opts := grpcecho.Options{
		Pod:      testPod,
		Ledger:   b.ledger,
		Controls: b.controls,
		Limits:   fault.Limits{MaxDelay: time.Minute, MaxMessages: 50},
		Listener: "grpc",
	}
	clientCreds := insecure.NewCredentials()
	if useTLS {
		cert := testcert.New(t, "echo.test", "127.0.0.1")
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
		opts.Listener = "grpcs"
		clientCreds = credentials.NewTLS(&tls.Config{RootCAs: cert.Pool, ServerName: "echo.test"})
	}
	gs := grpcecho.NewServer(opts)
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(ln) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	b.addr = ln.Addr().String()
	b.authority = b.addr
	if useTLS {
		b.authority = "echo.test" // grpc-go sends the TLS server name
	}
	b.conn = dial(t, b.addr, clientCreds)
	b.echo = echopb.NewEchoClient(b.conn)
	b.admin = echopb.NewAdminClient(b.conn)
	return b
}

// listen opens a loopback port.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return ln
}

// dial connects a client; it is closed when the test ends.
func dial(t testing.TB, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// withFault returns ctx carrying a request id and, if spec is not empty, a
// fault spec.
func withFault(ctx context.Context, id, spec string) context.Context {
	kv := []string{echowire.IDMetadata, id}
	if spec != "" {
		kv = append(kv, echowire.FaultMetadata, spec)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// timeout returns a context that ends after d, cancelled when the test ends.
func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitEntry polls the ledger until ok accepts id's entry, and fails the test
// if that does not happen within a generous deadline.
func waitEntry(t *testing.T, l *ledger.Ledger, id string, ok func(ledger.Entry) bool) ledger.Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, found := l.Get(id)
		if found && ok(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger entry of %q did not reach the expected state in time; last: %+v (found %t)", id, e, found)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

// ended reports whether the entry has n attempts that all ended.
func ended(n int) func(ledger.Entry) bool {
	return func(e ledger.Entry) bool {
		if len(e.Attempts) != n {
			return false
		}
		for _, a := range e.Attempts {
			if a.Outcome == ledger.InFlight {
				return false
			}
		}
		return true
	}
}

// within fails the test unless min <= got <= min+tolerance.
func within(t *testing.T, what string, got, min time.Duration) {
	t.Helper()
	if got < min || got > min+tolerance {
		t.Errorf("%s took %v; want from %v to %v", what, got, min, min+tolerance)
	}
}
