package tests_test

import (
	"slices"
	"testing"

	"github.com/gatecheck/gatecheck/conformance/negative"
	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/gateway/dataplane"
	"github.com/gatecheck/gatecheck/reports"
)

// gatecheck's connection timeout tests (GATECHECK-CONNECTION-TIMEOUTS).
const (
	connServer    = "ConnectionServerTimeout"
	connClient    = "ConnectionClientTimeout"
	connTunnel    = "ConnectionTunnelTimeout"
	connClientFin = "ConnectionClientFinTimeout"
	connServerFin = "ConnectionServerFinTimeout"
	connTLS       = "ConnectionTLSInspectDelay"
)

var connTests = []string{connServer, connClient, connTunnel, connClientFin, connServerFin, connTLS}

// eachGateway returns a MutateConfig that applies f to the connection
// timeouts of every Gateway of a snapshot.
func eachGateway(f func(*dataplane.ConnectionTimeouts)) func(*dataplane.Config) {
	return func(cfg *dataplane.Config) {
		for i := range cfg.Gateways {
			f(&cfg.Gateways[i].Timeouts)
		}
	}
}

// TestConnectionTimeoutsInProcess runs the connection timeout tests
// against the in-process reference gateway: each must pass and record
// what it observed.
func TestConnectionTimeoutsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the in-process cluster and runs conformance tests")
	}
	o := runner.DefaultOptions()
	for _, ct := range runner.AllTests() {
		if !slices.Contains(connTests, ct.ShortName) {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
	var res *runner.Result
	// Run completes in t's cleanups; this one, registered first, runs last.
	t.Cleanup(func() {
		if res == nil {
			return // Run failed, and said so
		}
		got := map[string]reports.TestResult{}
		for _, tr := range res.Run.Tests {
			got[tr.ShortName] = tr
		}
		for _, name := range connTests {
			tr, ok := got[name]
			if !ok || tr.Result != reports.Pass {
				t.Errorf("%s: result %q, want pass; %s", name, tr.Result, tr.Message)
				continue
			}
			if len(tr.Observations) == 0 {
				t.Errorf("%s recorded no observations", name)
			}
		}
	})
	var err error
	if res, err = runner.Run(t, o); err != nil {
		t.Fatal(err)
	}
}

// TestConnectionTimeoutsCatchBreakages runs the connection timeout tests
// against the reference gateway with one timeout ignored at a time, each in
// a child process: the test of that timeout fails and the others pass.
func TestConnectionTimeoutsCatchBreakages(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs conformance tests against broken reference gateways")
	}
	cases := []struct {
		breakage string
		fail     string
	}{
		{"conn-server-timeout-ignored", connServer},
		{"conn-client-timeout-ignored", connClient},
		{"conn-tunnel-timeout-ignored", connTunnel},
		{"conn-client-fin-timeout-ignored", connClientFin},
		{"conn-server-fin-timeout-ignored", connServerFin},
		{"conn-tls-inspect-delay-ignored", connTLS},
	}
	for _, tc := range cases {
		t.Run(tc.breakage, func(t *testing.T) {
			t.Parallel()
			got := negative.Run(t, "TestNegativeHelper", tc.breakage, connTests...)
			for _, name := range connTests {
				want := reports.Pass
				if name == tc.fail {
					want = reports.Fail
				}
				if got[name] != want {
					t.Errorf("%s: %s = %q, want %q", tc.breakage, name, got[name], want)
				}
			}
		})
	}
}
