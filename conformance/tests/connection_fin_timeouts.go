package tests

import (
	"errors"
	"io"
	"net/url"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatecheck/gatecheck/conformance/observe"
	"github.com/gatecheck/gatecheck/contract/echowire"
	"github.com/gatecheck/gatecheck/features"
)

func init() {
	ConformanceTests = append(ConformanceTests, ConnectionClientFinTimeout, ConnectionServerFinTimeout)
}

// ConnectionClientFinTimeout checks the gateway's client-fin timeout
// (HAProxy's "timeout client-fin"): the backend half-closes a WebSocket
// (/ws?gatecheck-ws=halfclose), the client sees the FIN passed on and
// stays idle without closing, and the gateway closes the tunnel no earlier
// than the client-fin timeout after the backend's half-close, and within
// the tolerance after it. The backend's ledger times it: from its
// half-close to the gateway closing its connection.
var ConnectionClientFinTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionClientFinTimeout",
	Description: "After the backend half-closes a WebSocket, the gateway closes the idle client side at about its client-fin timeout.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionClientFinTimeout,
	},
	Manifests: []string{connManifest},
	Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
		d := expectTimeout(t, "clientFinTimeout", ExpectedConnectionTimeouts().ClientFin)
		g := newConnGateway(t, s)
		tol := TimingTolerance()
		id := newHTTPRequestID(t)
		_, conn, _ := g.openWebSocket(t, "/ws?"+echowire.WSModeQuery+"="+echowire.WSHalfClose+"&"+echowire.IDQuery+"="+url.QueryEscape(id))
		// The backend's FIN must come through; then the client stays
		// idle and open.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("after the backend's half-close: read %v, want EOF (the gateway passes the FIN on)", err)
		}
		a := endedWSAttempt(t, g, id, connGiveUp(d))
		gap := a.Ended.Sub(*a.HeadersSent)
		observe.Record(t, "halfclose-to-close", gap.Round(time.Millisecond))
		if gap < d-ledgerLag || gap > d+tol {
			t.Errorf("the gateway closed the tunnel %v after the backend's half-close, want within [%v, %v] (client-fin timeout %v, tolerance %v)",
				gap.Round(time.Millisecond), d, d+tol, d, tol)
		}
	},
}

// ConnectionServerFinTimeout checks the gateway's server-fin timeout
// (HAProxy's "timeout server-fin"): the client half-closes a WebSocket, the
// backend (/ws?gatecheck-ws=hold) sees the FIN passed on and stays idle
// without closing, and the gateway ends the tunnel, closing the client's
// connection, no earlier than the server-fin timeout after the client's
// half-close and within the tolerance after it.
var ConnectionServerFinTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionServerFinTimeout",
	Description: "After the client half-closes a WebSocket, the gateway closes the idle backend side, and the tunnel, at about its server-fin timeout.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionServerFinTimeout,
	},
	Manifests: []string{connManifest},
	Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
		d := expectTimeout(t, "serverFinTimeout", ExpectedConnectionTimeouts().ServerFin)
		g := newConnGateway(t, s)
		tol := TimingTolerance()
		id := newHTTPRequestID(t)
		_, conn, _ := g.openWebSocket(t, "/ws?"+echowire.WSModeQuery+"="+echowire.WSHold+"&"+echowire.IDQuery+"="+url.QueryEscape(id))
		hc, ok := conn.(interface{ CloseWrite() error })
		if !ok {
			t.Fatalf("the connection to the Gateway (%T) cannot half-close", conn)
		}
		start := time.Now()
		if err := hc.CloseWrite(); err != nil {
			t.Fatalf("half-closing: %v", err)
		}
		elapsed, _, gaveUp := closedAfter(conn, start, connGiveUp(d))
		observe.Record(t, "halfclose-to-close", elapsed.Round(time.Millisecond))
		switch {
		case gaveUp:
			t.Errorf("the tunnel was still open %v after the client's half-close (server-fin timeout %v)", elapsed.Round(time.Millisecond), d)
		case elapsed < d || elapsed > d+tol:
			t.Errorf("the tunnel was closed %v after the client's half-close, want within [%v, %v] (server-fin timeout %v, tolerance %v)",
				elapsed.Round(time.Millisecond), d, d+tol, d, tol)
		}
		// Evidence that the FIN reached the backend, which then held.
		endedWSAttempt(t, g, id, 5*time.Second)
	},
}

// endedWSAttempt polls the backend's ledger until the controlled WebSocket
// of id has ended, and returns its attempt; it fails t after giveUp.
func endedWSAttempt(t *testing.T, g *connTarget, id string, giveUp time.Duration) echowire.Attempt {
	t.Helper()
	deadline := time.Now().Add(giveUp)
	var last error
	for {
		e, ok, err := g.c.ledgerEntry(id)
		last = err
		if ok && len(e.Attempts) == 1 {
			a := e.Attempts[0]
			if a.Ended != nil && a.HeadersSent != nil {
				if a.Outcome != echowire.Answered {
					t.Fatalf("the backend's WebSocket %s ended %s, want answered: %+v", id, a.Outcome, a)
				}
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backend's WebSocket %s had not ended after %v (ledger found: %v, last error: %v)", id, giveUp, ok, last)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}
