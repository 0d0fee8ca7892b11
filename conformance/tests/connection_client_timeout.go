package tests

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// ConnectionClientTimeout checks the gateway's client timeout (HAProxy's
// "timeout client"): a client connection that sends nothing, and one that
// stops in the middle of its request headers, are closed no earlier than
// the timeout and within the tolerance after it. The gateway may answer
// (408) before it closes; the test asks only for the close.
var ConnectionClientTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionClientTimeout",
	Description: "An idle client connection, and one stalled mid-request, are closed at about the gateway's client timeout.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportConnectionClientTimeout,
	},
	Parallel: true,
	Test:     testConnectionClientTimeout,
}

func testConnectionClientTimeout(t *testing.T, s *suite.ConformanceTestSuite) {
	d := expectTimeout(t, "clientTimeout", ExpectedConnectionTimeouts().Client)
	g := newConnGateway(t, s, "gatewitness-conn-client")
	measure(t)
	lo, hi := timerWindow(d)
	for _, c := range []struct {
		name string
		send string // sent at once, then nothing
	}{
		{"idle", ""},
		{"mid-request", "GET / HTTP/1.1\r\nHost: " + g.host + "\r\nX-Gatewitness-Partial: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each connection waits on its own
			// The gateway's wait starts once the connection is up,
			// after this.
			start := time.Now()
			conn := g.rawConn(t, g.addr)
			if _, err := io.WriteString(conn, c.send); err != nil {
				t.Fatalf("sending %q: %v", c.send, err)
			}
			elapsed, got, gaveUp := closedAfter(conn, start, connGiveUp(d))
			observe.Record(t, "closed", observe.Within(elapsed, d, lo, hi))
			if len(got) > 0 {
				observe.Record(t, "answer", strings.SplitN(string(got), "\r\n", 2)[0])
			}
			// Earlier fails: the client timeout is the time a slow
			// client is given. Later than the tolerance fails: the
			// idle connection lingered.
			switch {
			case gaveUp:
				t.Errorf("the connection was still open after %v (client timeout %v)", elapsed.Round(time.Millisecond), d)
			default:
				checkWindow(t, start, elapsed, lo, hi, fmt.Sprintf("the connection was closed (client timeout %v)", d))
			}
			if len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.") {
				t.Errorf("read %.100q before the close, want nothing or an HTTP response", got)
			}
		})
	}
}
