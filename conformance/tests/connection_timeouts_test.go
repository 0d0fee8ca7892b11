package tests_test

import (
	"testing"

	"github.com/gatecheck/gatecheck/conformance/negative"
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
	runInProcess(t, nil, connTests, func(tr reports.TestResult) {
		if len(tr.Observations) == 0 {
			t.Errorf("%s recorded no observations", tr.ShortName)
		}
	})
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
