package runner

import "testing"

func TestFailedAssertions(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{
		{
			name: "t.Errorf among progress lines and observations, in a subtest",
			log: "=== RUN   gatewitness/HTTPRouteRetryCodes\n" +
				"    helpers.go:20: 2026-01-01T00:00:00.123Z: Applying tests/retry.yaml\n" +
				"=== RUN   gatewitness/HTTPRouteRetryCodes/code_503\n" +
				"    retry.go:40: observe: attempts = 1\n" +
				"    retry.go:41: the backend saw 1 attempt; want 3 (retry.codes lists 503)\n" +
				"        ledger: a1 503\n" +
				"    retry.go:50: observe: status = 503\n" +
				"--- FAIL: gatewitness/HTTPRouteRetryCodes/code_503 (0.20s)\n" +
				"=== RUN   gatewitness/HTTPRouteRetryCodes/code_500\n" +
				"    retry.go:40: observe: attempts = 3\n" +
				"--- PASS: gatewitness/HTTPRouteRetryCodes/code_500 (0.20s)\n" +
				"--- FAIL: gatewitness/HTTPRouteRetryCodes (0.50s)\n",
			want: "code_503: retry.go:41: the backend saw 1 attempt; want 3 (retry.codes lists 503)\n    ledger: a1 503",
		},
		{
			name: "testify's block, summarised at the test's line",
			log: "=== RUN   gatewitness/TLSRouteSimpleSameNamespace\n" +
				"=== RUN   gatewitness/TLSRouteSimpleSameNamespace/reaches_backend\n" +
				"    tcp.go:100: 2026-11-25T22:50:55.4Z: client could not connect: connection refused; retrying\n" +
				"    tlsroute-simple-same-namespace.go:66: \n" +
				"        \tError Trace:\t/root/go/pkg/mod/x/conformance/utils/tcp/tcp.go:97\n" +
				"        \t            \t\t\t\t/root/go/pkg/mod/x/conformance/tests/tlsroute-simple-same-namespace.go:66\n" +
				"        \tError:      \tNot equal: \n" +
				"        \t            \texpected: 200\n" +
				"        \t            \tactual  : 503\n" +
				"        \tTest:       \tgatewitness/TLSRouteSimpleSameNamespace/reaches_backend\n" +
				"        \tMessages:   \texpected status code to be 200\n" +
				"--- FAIL: gatewitness/TLSRouteSimpleSameNamespace/reaches_backend (10.01s)\n" +
				"=== NAME  gatewitness/TLSRouteSimpleSameNamespace\n" +
				"    apply.go:279: 2026-11-25T22:50:56.4Z: Deleting gateway-tlsroute Gateway\n",
			want: "reaches_backend: tlsroute-simple-same-namespace.go:66: Not equal: expected: 200 actual  : 503 (expected status code to be 200)",
		},
		{
			name: "only progress lines: the last one is the fatal one (tlog.Fatalf)",
			log: "=== RUN   gatewitness/GatewayX\n" +
				"    gw.go:10: 2026-01-01T00:00:00Z: waiting\n" +
				"    gw.go:12: 2026-01-01T00:00:30Z: Gateway never became Programmed\n" +
				"--- FAIL: gatewitness/GatewayX (30.00s)\n",
			want: "gw.go:12: 2026-01-01T00:00:30Z: Gateway never became Programmed",
		},
		{
			name: "the start was cut: entries with no framing line",
			log:  "[earlier lines cut]\n    x.go:3: got 1; want 2\n",
			want: "x.go:3: got 1; want 2",
		},
		{
			// As the runner gets it: while the test ends, before its own
			// "--- FAIL" line, with upstream's cleanup after its lines.
			name: "the conformance test's own assertion, its FAIL line not yet written",
			log: "=== RUN   gatewitness/ConnectionServerTimeout\n" +
				"    runner.go:349: 2026-11-25T22:46:34.48Z: Applying gatewitness/connection-timeouts.yaml\n" +
				"    connection_server_timeout.go:37: observe: exchange = status 504 after 2.001s\n" +
				"    connection_server_timeout.go:42: 504 after 2.001s, want within [2s, 2.001s]\n" +
				"    apply.go:279: 2026-11-25T22:46:37.91Z: Deleting gatewitness-connection-timeouts Deployment\n",
			want: "connection_server_timeout.go:42: 504 after 2.001s, want within [2s, 2.001s]",
		},
		{
			name: "a subtest's failure, the parent writing after it",
			log: "=== RUN   gatewitness/X\n=== RUN   gatewitness/X/a\n    x.go:5: got 1; want 2\n--- FAIL: gatewitness/X/a (0.00s)\n" +
				"=== NAME  gatewitness/X\n    x.go:9: 2026-01-01T00:00:00Z: done\n",
			want: "a: x.go:5: got 1; want 2",
		},
		{
			name: "only progress lines and cleanup: the last progress line",
			log: "=== RUN   gatewitness/GatewayY\n    gw.go:12: 2026-01-01T00:00:30Z: timed out waiting for Programmed\n" +
				"    apply.go:279: 2026-01-01T00:00:31Z: Deleting Gateway\n",
			want: "gw.go:12: 2026-01-01T00:00:30Z: timed out waiting for Programmed",
		},
	}
	for _, tt := range tests {
		if got := FailedAssertions(tt.log); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"HTTPRouteRetry", "HTTPRouteRetryCodes", "HTTPRouteCORS", "GATEWAY-HTTP", "GATEWAY-GRPC"}
	for in, want := range map[string]string{
		"HTTPRouteRetryCode": "HTTPRouteRetryCodes",
		"httproutecors":      "HTTPRouteCORS",
		"GATEWAY-GPRC":       "GATEWAY-GRPC",
		"RetryCodes":         "HTTPRouteRetryCodes",
		"Teleport":           "",
		"X":                  "",
	} {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
