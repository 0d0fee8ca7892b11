package tests

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// ConnectionClientFinTimeout checks what an operator sets the client-fin
// timeout (HAProxy's "timeout client-fin") for: no half-closed connection
// lingers. The backend half-closes a WebSocket
// (/ws?gatewitness-ws=halfclose); the client must get the FIN passed on (or
// the connection closed), and stays idle without closing; then no side of
// the tunnel may outlive the client-fin timeout plus the tolerance:
//
//   - the backend's connection: its ledger times the gateway's close from
//     the backend's half-close;
//   - the client's: once the client has its FIN, the gateway's close of
//     the client side cannot be seen without sending, so the client sends
//     one byte at client-fin plus the tolerance after it got the FIN, and a
//     closed connection answers with a reset.
//
// Closing earlier is allowed, at once included: a half-closed tunnel
// through an HTTP proxy has nothing more to carry from the backend, and
// HAProxy in HTTP mode closes both sides at once when the backend sends its
// FIN. Holding the tunnel half-open until client-fin is the finer
// ConnectionClientFinHalfOpen.
var ConnectionClientFinTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionClientFinTimeout",
	Description: "After the backend half-closes a WebSocket, the client gets the FIN (or the close), and neither side of the tunnel outlives the gateway's client-fin timeout; closing at once is allowed.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionClientFinTimeout,
	},
	Parallel: true,
	Test:     testConnectionClientFinTimeout,
}

func testConnectionClientFinTimeout(t *testing.T, s *suite.ConformanceTestSuite) {
	d := expectTimeout(t, "clientFinTimeout", ExpectedConnectionTimeouts().ClientFin)
	g := newConnGateway(t, s, "gatewitness-conn-client-fin")
	measure(t)
	tol := TimingTolerance()
	id := testclient.NewID(t)
	_, conn, start := g.openWebSocket(t, "/ws?"+echowire.WSModeQuery+"="+echowire.WSHalfClose+"&"+echowire.IDQuery+"="+url.QueryEscape(id))
	// The backend half-closes at once: its FIN, or the gateway's
	// close, must reach the client within the window's end.
	finAt, err := readUntilEnd(conn, start, d+tol)
	observe.Record(t, "fin-after", finAt.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("after the backend's half-close: %v; want EOF or a reset within client-fin %v plus the tolerance %v", err, d, tol)
	}
	// Later than the tolerance fails: a half-closed connection
	// outlived the limit set to stop it lingering. Earlier is fine.
	a := endedWSAttempt(t, g, id, connGiveUp(d))
	gap := a.Ended.Sub(*a.HeadersSent)
	observe.Record(t, "halfclose-to-backend-close", gap.Round(time.Millisecond))
	if gap > d+tol {
		missedLate(t, *a.HeadersSent, gap, 0, d+tol, fmt.Sprintf("the gateway closed the backend's side of the tunnel %v after the backend's half-close, want at most %v (client-fin timeout %v, tolerance %v)",
			gap.Round(time.Millisecond), d+tol, d, tol))
	}
	open, detail := stillOpenAt(conn, start.Add(finAt+d+tol))
	observe.Record(t, "client-side-at-limit", detail)
	if open {
		t.Errorf("the client's side of the half-closed tunnel was still open %v after the client got the FIN (client-fin timeout %v, tolerance %v): %s",
			d+tol, d, tol, detail)
	}
}

// ConnectionClientFinHalfOpen checks the finer reading of the client-fin
// timeout: the gateway keeps a tunnel whose backend half-closed open to the
// client's data until the client-fin timeout, and closes it then. The
// backend half-closes a WebSocket (/ws?gatewitness-ws=halfclose), the client
// sees the FIN passed on and stays idle without closing, and the gateway
// closes the tunnel no earlier than the client-fin timeout after the
// backend's half-close, and within the tolerance after it. The backend's
// ledger times it: from its half-close to the gateway closing its
// connection.
var ConnectionClientFinHalfOpen = suite.ConformanceTest{
	ShortName:   "ConnectionClientFinHalfOpen",
	Description: "After the backend half-closes a WebSocket, the gateway passes the FIN on and keeps the tunnel half-open until its client-fin timeout, then closes it.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionClientFinTimeout,
		features.SupportConnectionClientFinHalfOpen,
	},
	Parallel: true,
	Test:     testConnectionClientFinHalfOpen,
}

func testConnectionClientFinHalfOpen(t *testing.T, s *suite.ConformanceTestSuite) {
	d := expectTimeout(t, "clientFinTimeout", ExpectedConnectionTimeouts().ClientFin)
	g := newConnGateway(t, s, "gatewitness-conn-client-fin-held")
	measure(t)
	tol := TimingTolerance()
	id := testclient.NewID(t)
	_, conn, _ := g.openWebSocket(t, "/ws?"+echowire.WSModeQuery+"="+echowire.WSHalfClose+"&"+echowire.IDQuery+"="+url.QueryEscape(id))
	// The backend's FIN must come through as a FIN, not a close; then
	// the client stays idle and open.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("after the backend's half-close: read %v, want EOF (the gateway passes the FIN on)", err)
	}
	a := endedWSAttempt(t, g, id, connGiveUp(d))
	gap := a.Ended.Sub(*a.HeadersSent)
	observe.Record(t, "halfclose-to-close", gap.Round(time.Millisecond))
	// Earlier fails: this feature promises the client the client-fin
	// timeout to finish sending. Later than the tolerance fails: the
	// half-closed tunnel lingered.
	checkWindow(t, *a.HeadersSent, gap, d-ledgerLag(), d+tol, fmt.Sprintf("the gateway closed the tunnel after the backend's half-close (client-fin timeout %v)", d))
}

// ConnectionServerFinTimeout checks the gateway's server-fin timeout
// (HAProxy's "timeout server-fin"): the client half-closes a WebSocket, the
// backend (/ws?gatewitness-ws=hold) sees the FIN passed on and stays idle
// without closing, and the gateway ends the tunnel, closing the client's
// connection, no earlier than the server-fin timeout after the client's
// half-close and within the tolerance after it.
//
// Unlike client-fin, earlier fails here: a client that has sent all it
// will send (and half-closed) typically waits for the backend's answer, and
// closing the backend's side before server-fin cuts off an answer still to
// come. HAProxy keeps the server side until server-fin in HTTP and TCP
// mode.
var ConnectionServerFinTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionServerFinTimeout",
	Description: "After the client half-closes a WebSocket, the gateway passes the FIN on and closes the idle backend side, and the tunnel, at its server-fin timeout, not earlier.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionServerFinTimeout,
	},
	Parallel: true,
	Test:     testConnectionServerFinTimeout,
}

func testConnectionServerFinTimeout(t *testing.T, s *suite.ConformanceTestSuite) {
	d := expectTimeout(t, "serverFinTimeout", ExpectedConnectionTimeouts().ServerFin)
	g := newConnGateway(t, s, "gatewitness-conn-server-fin")
	measure(t)
	id := testclient.NewID(t)
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
	// Earlier fails: the backend's answer may still be on its way.
	// Later than the tolerance fails: the half-closed tunnel lingered.
	switch {
	case gaveUp:
		t.Errorf("the tunnel was still open %v after the client's half-close (server-fin timeout %v)", elapsed.Round(time.Millisecond), d)
	default:
		lo, hi := timerWindow(d)
		checkWindow(t, start, elapsed, lo, hi, fmt.Sprintf("the tunnel was closed after the client's half-close (server-fin timeout %v)", d))
	}
	// Evidence that the FIN reached the backend, which then held.
	endedWSAttempt(t, g, id, 5*time.Second)
}

// endedWSAttempt polls the backend's ledger until the controlled WebSocket
// of id has ended, and returns its attempt; it fails t after giveUp.
func endedWSAttempt(t *testing.T, g *connTarget, id string, giveUp time.Duration) echowire.Attempt {
	t.Helper()
	var a echowire.Attempt
	var found bool
	var last error
	ended := testclient.Poll(giveUp, 20*time.Millisecond, func() bool {
		var e echowire.Entry
		e, found, last = g.c.Ledger(id)
		if !found || len(e.Attempts) != 1 {
			return false
		}
		a = e.Attempts[0]
		return a.Ended != nil && a.HeadersSent != nil
	})
	switch {
	case !ended:
		t.Fatalf("the backend's WebSocket %s had not ended after %v (ledger found: %v, last error: %v)", id, giveUp, found, last)
	case a.Outcome != echowire.Answered:
		t.Fatalf("the backend's WebSocket %s ended %s, want answered: %+v", id, a.Outcome, a)
	}
	return a
}

// readUntilEnd reads conn until it ends (EOF or a reset) and returns when
// that was, from start; it gives up at start+within with an error.
func readUntilEnd(conn net.Conn, start time.Time, within time.Duration) (time.Duration, error) {
	_ = conn.SetReadDeadline(start.Add(within))
	buf := make([]byte, 4<<10)
	for {
		_, err := conn.Read(buf)
		if err == nil {
			continue // the halfclose WebSocket sends nothing; tolerate what a gateway adds
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return time.Since(start), err
		}
		return time.Since(start), nil // EOF, or a reset: the end either way
	}
}

// stillOpenAt waits until at and then finds out whether the gateway still
// has conn, which it has already half-closed (the client read its FIN), open:
// the client sends a byte, which a closed connection answers with a reset,
// and then sends again, which fails once the reset has arrived. It reports
// open when the writes still succeed a second later, and what it saw.
func stillOpenAt(conn net.Conn, at time.Time) (open bool, detail string) {
	time.Sleep(time.Until(at)) // the moment the verdict is about, not synchronisation
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	probe := []byte{0}
	var werr error
	// Waiting for the reset to arrive, polled.
	if testclient.Poll(time.Second, 20*time.Millisecond, func() bool { _, werr = conn.Write(probe); return werr != nil }) {
		return false, "closed: " + werr.Error()
	}
	return true, "open: writes accepted for 1s"
}
