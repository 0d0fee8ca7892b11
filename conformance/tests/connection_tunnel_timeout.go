package tests

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// ConnectionTunnelTimeout checks the gateway's tunnel timeout (HAProxy's
// "timeout tunnel"): once a connection is upgraded to a WebSocket, the
// tunnel timeout replaces the client and server timeouts. An idle
// WebSocket is closed no earlier than the tunnel timeout (so not at the
// shorter client or server timeout, when those are shorter) and within the
// tolerance after it; a WebSocket with a message every quarter of the
// tunnel timeout stays open past the latest close that window accepts,
// by more than the tolerance again: the tunnel timeout is an inactivity
// limit, not a deadline.
var ConnectionTunnelTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionTunnelTimeout",
	Description: "An idle WebSocket is closed at about the gateway's tunnel timeout, which overrides the client and server timeouts, while an active one stays open.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		gwfeatures.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportConnectionTunnelTimeout,
	},
	Parallel: true,
	Test:     testConnectionTunnelTimeout,
}

func testConnectionTunnelTimeout(t *testing.T, s *suite.ConformanceTestSuite) {
	exp := ExpectedConnectionTimeouts()
	d := expectTimeout(t, "tunnelTimeout", exp.Tunnel)
	g := newConnGateway(t, s, "gatewitness-conn-tunnel")
	measure(t)
	tol := TimingTolerance()
	lo, hi := timerWindow(d)
	observe.Record(t, "tunnel-timeout", d)

	// The two WebSockets are independent, so they share the wait.
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		_, conn, start := g.openWebSocket(t, "/ws")
		elapsed, got, gaveUp := closedAfter(conn, start, connGiveUp(d))
		observe.Record(t, "closed", elapsed.Round(time.Millisecond))
		// Earlier fails: the tunnel timeout is the idle time users give a
		// WebSocket, and a close at the client or server timeout is
		// the wrong limit. Later than the tolerance fails: it lingered.
		switch {
		case gaveUp:
			t.Errorf("the idle WebSocket was still open after %v (tunnel timeout %v)", elapsed.Round(time.Millisecond), d)
		default:
			checkWindow(t, start, elapsed, lo, hi, fmt.Sprintf("the idle WebSocket was closed (tunnel timeout %v; client %v, server %v)",
				d, exp.Client, exp.Server))
		}
		if len(got) > 0 {
			observe.Record(t, "bytes-before-close", len(got))
		}
	})

	t.Run("active", func(t *testing.T) {
		t.Parallel()
		ws, _, start := g.openWebSocket(t, "/ws")
		// The WebSocket must answer after the latest close the idle
		// window accepts (hi) by more than the tolerance again: the test
		// ends on the first echo received that late, not a pacing tick
		// after it.
		outlive := hi + tol
		tick := time.NewTicker(d / 4)
		defer tick.Stop()
		n := 0
		for {
			_ = ws.SetDeadline(time.Now().Add(d/4 + tol + 5*time.Second))
			if err := websocket.Message.Send(ws, "ping"); err != nil {
				t.Fatalf("an active WebSocket: sending message %d after %v: %v", n+1, time.Since(start).Round(time.Millisecond), err)
			}
			var echo string
			if err := websocket.Message.Receive(ws, &echo); err != nil || echo != "ping" {
				t.Fatalf("an active WebSocket: echo of message %d after %v: %q, %v", n+1, time.Since(start).Round(time.Millisecond), echo, err)
			}
			n++
			if time.Since(start) > outlive {
				break
			}
			<-tick.C // pacing the messages, not synchronisation
		}
		observe.Record(t, "messages", n)
	})
}
