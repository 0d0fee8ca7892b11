package tests

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// ConnectionServerTimeout checks the gateway's server timeout (HAProxy's
// "timeout server"): a backend that stays silent for longer gets the
// client 504 Gateway Timeout, no earlier than the timeout and within the
// tolerance after it.
var ConnectionServerTimeout = suite.ConformanceTest{
	ShortName:   "ConnectionServerTimeout",
	Description: "A backend silent for longer than the gateway's server timeout gets the client 504 at about that time.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportConnectionServerTimeout,
	},
	Parallel: true,
	Test:     testConnectionServerTimeout,
}

func testConnectionServerTimeout(t *testing.T, s *suite.ConformanceTestSuite) {
	d := expectTimeout(t, "serverTimeout", ExpectedConnectionTimeouts().Server)
	g := newConnGateway(t, s, "gatewitness-conn-server")
	measure(t)
	tol := TimingTolerance()
	silence := d + 2*tol + 5*time.Second
	start := time.Now()
	x := g.c.Do(t, testclient.Request{Path: "/silent", Fault: fmt.Sprintf("delay=%dms", silence.Milliseconds()), Limit: connGiveUp(d)})
	observe.Record(t, "exchange", x.String())
	if x.Err != nil || x.Status != http.StatusGatewayTimeout {
		t.Fatalf("a backend silent for %v: %v; want 504 after the server timeout %v", silence, x, d)
	}
	// Earlier fails: the server timeout is the time a slow backend is
	// given to answer. Later than the tolerance fails: it did not end
	// the wait.
	lo, hi := timerWindow(d)
	checkWindow(t, start, x.Headers, lo, hi, fmt.Sprintf("504 (server timeout %v)", d))
	e := g.c.SettledLedger(t, x.ID, settleWithin())
	observe.Record(t, "backend", testclient.Summary(e))
	if len(e.Attempts) != 1 {
		t.Errorf("the backend saw %d attempts (%s), want 1: the server timeout is not a retry", len(e.Attempts), testclient.Summary(e))
	}
}
