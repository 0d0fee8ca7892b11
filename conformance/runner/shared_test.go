package runner_test

import (
	"time"

	"testing"

	"github.com/gatewitness/gatewitness/cluster"
	"github.com/gatewitness/gatewitness/conformance/runner"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/reports"
)

// needOwnSocket are the gatewitness tests that need a socket of their
// Gateway's own: the connection timeout tests, whose GatewayClass's
// timeouts one socket shared with the base Gateways cannot show.
var needOwnSocket = map[string]bool{
	"ConnectionServerTimeout": true, "ConnectionClientTimeout": true, "ConnectionTunnelTimeout": true,
	"ConnectionClientFinTimeout": true, "ConnectionClientFinHalfOpen": true, "ConnectionServerFinTimeout": true,
	"ConnectionTLSInspectDelay": true,
}

// TestSharedAddressMode runs every gatewitness test against the in-process
// reference gateway serving as implementations with one entry point per
// port do (cluster.Gateway.SharedAddress: one address for every Gateway,
// the listeners of all Gateways on a port merged onto one socket). Every
// test passes but those that need a socket of their Gateway's own, which
// skip naming the shared address.
func TestSharedAddressMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every gatewitness test in-process")
	}
	o := runner.DefaultOptions()
	o.ReportDir = t.TempDir()
	// What this test shows is that every test finds its routes and
	// backends through one shared socket; how closely timers hold is the
	// business of conformance/tests' own runs. It runs the whole suite
	// beside make test's other packages, so its timing tests get the largest
	// tolerance the runner accepts (a window still opens at the configured time: a timer that
	// fires early, or never, still fails).
	o.TimingTolerance = 2 * time.Second // the largest the runner accepts
	skipAllBut(&o, gctests.IsGatewitnessTest)
	runChecked(t, func() (*runner.Result, error) {
		return runner.RunInProcess(t, o, runner.InProcess{Gateway: cluster.Gateway{SharedAddress: true}})
	}, func(t *testing.T, res *runner.Result) {
		ran := 0
		for _, tr := range res.Run.Tests {
			if !gctests.IsGatewitnessTest(tr.ShortName) {
				continue
			}
			ran++
			switch {
			case needOwnSocket[tr.ShortName]:
				// The message is the reason the test logged when the CLI
				// captured the log (Options.TestLog); here it says where
				// the log is, and TestSharingGateway checks the reason.
				if tr.Result != reports.Skip {
					t.Errorf("%s: %s %q; want it skipped: its Gateway shares the address %s with the base Gateways", tr.ShortName, tr.Result, tr.Message, cluster.SharedGatewayAddress)
				}
			case tr.Result != reports.Pass:
				t.Errorf("%s: %s %q; want pass on a shared address", tr.ShortName, tr.Result, tr.Message)
			}
		}
		if ran != len(gctests.ConformanceTests) {
			t.Errorf("recorded %d gatewitness tests; want %d", ran, len(gctests.ConformanceTests))
		}
	})
}
