package tests

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// Names in gatewitness/connection-tls-inspect-delay.yaml and the suite's
// start-up objects it uses.
const (
	connTLSManifest = ManifestPrefix + "connection-tls-inspect-delay.yaml"
	connTLSGateway  = "gatewitness-conn-tls" // the test's Gateway, which the TLSRoute names
	connTLSRoute    = "gatewitness-connection-tls"
	connTLSListener = "tls"
	// connTLSPort is the passthrough listener's port: not upstream's 443,
	// where the base Gateway same-namespace-with-https-listener
	// terminates TLS, so that an implementation that serves every Gateway
	// on one address can serve both.
	connTLSPort = 9443
	connTLSHost = "abc.example.com"           // in the suite's tls-passthrough-checks-certificate
	connTLSCA   = "tls-checks-ca-certificate" // the ConfigMap with its CA, key ca.crt
)

// ConnectionTLSInspectDelay checks the gateway's TLS inspect delay
// (HAProxy's "tcp-request inspect-delay"): on a TLS passthrough listener, a
// client that sends no ClientHello, or only part of one, is closed within
// [delay, delay + tolerance] of its connect, and no connection reaches the
// backend; a client with a ClientHello for the route's hostname is passed
// through to the backend, which terminates its TLS.
var ConnectionTLSInspectDelay = suite.ConformanceTest{
	ShortName:   "ConnectionTLSInspectDelay",
	Description: "On a TLS passthrough listener, a client that sends no ClientHello is closed at the gateway's TLS inspect delay, without a backend connection.",
	// SupportTLSRoute is not listed, though the test needs TLS
	// passthrough and TLSRoute (the feature registry records that
	// ConnectionTLSInspectDelay depends on it): the reference gateway
	// serves both, but cannot claim upstream's TLSRoute in-process, whose
	// data-plane tests dial the Gateway's address without the suite's
	// dialer.
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportConnectionTLSInspectDelay,
	},
	Manifests: []string{connTLSManifest},
	Parallel:  true,
	Test:      testConnectionTLSInspectDelay,
}

func testConnectionTLSInspectDelay(t *testing.T, s *suite.ConformanceTestSuite) {
	d := expectTimeout(t, "tlsInspectDelay", ExpectedConnectionTimeouts().TLSInspectDelay)
	tol := TimingTolerance()
	passthrough := gwv1.TLSModePassthrough
	same := gwv1.NamespacesFromSame
	g := newConnGateway(t, s, connTLSGateway, gwv1.Listener{
		Name: connTLSListener, Port: connTLSPort, Protocol: gwv1.TLSProtocolType,
		TLS:           &gwv1.ListenerTLSConfig{Mode: &passthrough},
		AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &same}},
	})
	gwNN := types.NamespacedName{Namespace: infraNamespace, Name: connTLSGateway}
	addr, _ := kubernetes.GatewayAndTLSRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(gwNN, connTLSListener), types.NamespacedName{Namespace: infraNamespace, Name: connTLSRoute})
	ca, err := kubernetes.GetConfigMapData(s.Client, s.TimeoutConfig, types.NamespacedName{Namespace: infraNamespace, Name: connTLSCA})
	if err != nil {
		t.Fatalf("reading ConfigMap %s/%s: %v", infraNamespace, connTLSCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ca["ca.crt"])) {
		t.Fatalf("ConfigMap %s/%s has no PEM certificate under ca.crt", infraNamespace, connTLSCA)
	}

	// A client with a ClientHello reaches the backend: the route may
	// take a while to be served, so try until it does.
	before, err := g.acceptedThroughPassthrough(addr, pool, s.TimeoutConfig.MaxTimeToConsistency)
	if err != nil {
		t.Fatalf("a TLS client with SNI %s through the passthrough listener %s: %v", connTLSHost, addr, err)
	}
	observe.Record(t, "backend-accepted-before", before)
	measure(t)
	lo, hi := timerWindow(d)

	cases := []struct {
		name, key string
		send      []byte
	}{
		{"silent", "silent", nil},
		// A handshake record header announcing 512 bytes, and the
		// first bytes of a ClientHello: the SNI never comes.
		{"partial ClientHello", "partial-clienthello", []byte{22, 3, 1, 2, 0, 1, 0, 1, 252, 3, 3}},
	}
	for _, tc := range cases {
		start := time.Now()
		conn := g.rawConn(t, addr)
		if _, err := conn.Write(tc.send); err != nil {
			t.Fatalf("%s: writing %d bytes: %v", tc.name, len(tc.send), err)
		}
		elapsed, got, gaveUp := closedAfter(conn, start, connGiveUp(d))
		observe.Record(t, tc.key, fmt.Sprintf("closed after %v, %d bytes read", elapsed.Round(time.Millisecond), len(got)))
		// Earlier fails: the inspect delay is the time a client is
		// given to send its ClientHello. Later than the tolerance
		// fails: the gateway waited on (a client timeout, say).
		switch {
		case gaveUp:
			t.Errorf("%s client: not closed %v after connecting, want within [%v, %v] (inspect delay %v, tolerance %v)",
				tc.name, elapsed.Round(time.Millisecond), d, d+tol, d, tol)
		default:
			checkWindow(t, start, elapsed, lo, hi, fmt.Sprintf("%s client: closed (inspect delay %v)", tc.name, d))
		}
	}

	after, err := g.acceptedThroughPassthrough(addr, pool, s.TimeoutConfig.MaxTimeToConsistency)
	if err != nil {
		t.Fatalf("a TLS client after the silent ones: %v", err)
	}
	observe.Record(t, "backend-accepted-after", after)
	if after != before+1 {
		t.Errorf("the backend accepted %d connections while the clients without a ClientHello were open, want 1 (the check's own): the gateway must not connect to a backend before it has the SNI",
			after-before)
	}
}

// acceptedThroughPassthrough opens a TLS connection with SNI connTLSHost
// through the passthrough listener at addr, trusting pool, and asks the
// echo-backend behind it how many connections it has accepted (ACCEPTED,
// counting this one). It tries until one attempt succeeds, for at most
// within, and returns the last error.
func (g *connTarget) acceptedThroughPassthrough(addr string, pool *x509.CertPool, within time.Duration) (uint64, error) {
	var n uint64
	var err error
	testclient.Poll(within, 200*time.Millisecond, func() bool {
		n, err = g.askAccepted(addr, pool)
		return err == nil
	})
	return n, err
}

func (g *connTarget) askAccepted(addr string, pool *x509.CertPool) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := g.dial(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("connecting: %w", err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	conn := tls.Client(raw, &tls.Config{ServerName: connTLSHost, RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err := conn.HandshakeContext(ctx); err != nil {
		return 0, fmt.Errorf("TLS handshake with the backend: %w", err)
	}
	r := bufio.NewReader(io.LimitReader(conn, 64<<10))
	welcome, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("reading the backend's welcome line: %w (got %q)", err, welcome)
	}
	if _, err := io.WriteString(conn, "ACCEPTED\n"); err != nil {
		return 0, fmt.Errorf("asking ACCEPTED: %w", err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("reading the answer to ACCEPTED: %w (got %q)", err, line)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ACCEPTED answered %q; want a count (is the backend gatewitness's echo-backend in TCP mode?)", line)
	}
	return n, nil
}
