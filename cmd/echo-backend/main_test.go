package main

import (
	"io"
	"strings"
	"testing"
	"time"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestModeFlagDecidesThePortDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want echobackend.Config
	}{
		{"tcp mode by flag", []string{"-mode", "tcp"}, nil,
			echobackend.Config{Mode: echobackend.ModeTCP, TCPPort: "3000", TLSPort: "8443"}},
		{"http mode by flag over TCP_ECHO_SERVER", []string{"-mode=http"}, map[string]string{"TCP_ECHO_SERVER": "1"},
			echobackend.Config{Mode: echobackend.ModeHTTP, HTTPPort: "3000", H2CPort: "3001", HTTPSPort: "8443", TCPPort: "3002"}},
		{"grpc mode by env", nil, map[string]string{"GRPC_ECHO_SERVER": "1", "HTTP_PORT": "9000"},
			echobackend.Config{Mode: echobackend.ModeGRPC, HTTPPort: "9000", HTTPSPort: "8443"}},
		{"flags override env, empty disables", []string{"-http-port", "0", "-tcp-port=", "-host", "127.0.0.1"}, map[string]string{"HTTP_PORT": "9000"},
			echobackend.Config{Mode: echobackend.ModeHTTP, Host: "127.0.0.1", HTTPPort: "0", H2CPort: "3001", HTTPSPort: "8443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config(tc.args, envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != tc.want.Mode || got.Host != tc.want.Host || got.HTTPPort != tc.want.HTTPPort || got.H2CPort != tc.want.H2CPort ||
				got.HTTPSPort != tc.want.HTTPSPort || got.TCPPort != tc.want.TCPPort || got.TLSPort != tc.want.TLSPort {
				t.Fatalf("config(%q) = mode %v host %q ports http=%q h2c=%q https=%q tcp=%q tls=%q; want %+v",
					tc.args, got.Mode, got.Host, got.HTTPPort, got.H2CPort, got.HTTPSPort, got.TCPPort, got.TLSPort, tc.want)
			}
		})
	}
}

func TestLimitsFromFlags(t *testing.T) {
	got, err := config([]string{"-max-delay=30s", "-ledger-max-ids=5"}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.Limits.MaxDelay != 30*time.Second || got.Ledger.MaxIDs != 5 {
		t.Fatalf("limits %v, ledger %+v", got.Limits, got.Ledger)
	}
}

func TestTimeoutsAndLedgerBytes(t *testing.T) {
	got, err := config([]string{"-read-timeout=2s", "-idle-timeout=3m", "-ledger-max-bytes=1000"},
		envOf(map[string]string{"GATEWITNESS_WRITE_TIMEOUT": "7m", "GATEWITNESS_READ_HEADER_TIMEOUT": "4s", "GATEWITNESS_READ_TIMEOUT": "9s"}))
	if err != nil {
		t.Fatal(err)
	}
	want := httpecho.Timeouts{ReadHeader: 4 * time.Second, Read: 2 * time.Second, Write: 7 * time.Minute, Idle: 3 * time.Minute}
	if got.Timeouts != want || got.Ledger.MaxBytes != 1000 {
		t.Fatalf("timeouts %+v, ledger %+v; want %+v and MaxBytes 1000", got.Timeouts, got.Ledger, want)
	}
	if _, err := config(nil, envOf(map[string]string{"GATEWITNESS_IDLE_TIMEOUT": "never"})); err == nil ||
		!strings.Contains(err.Error(), `GATEWITNESS_IDLE_TIMEOUT="never": accepted: a positive Go duration`) {
		t.Errorf("GATEWITNESS_IDLE_TIMEOUT=never: %v, want an error naming the variable", err)
	}
}

func TestBadFlagsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-mode", "udp"}, `-mode="udp": accepted: http, grpc or tcp`},
		{[]string{"-max-delay", "0s"}, "-max-delay: accepted: a value above zero"},
		{[]string{"-ledger-max-attempts", "-3"}, "-ledger-max-attempts: accepted: a value above zero"},
		{[]string{"-write-timeout", "0s"}, "-write-timeout: accepted: a value above zero"},
		{[]string{"-ledger-max-bytes", "0"}, "-ledger-max-bytes: accepted: a value above zero"},
		{[]string{"-max-delay", "soon"}, `invalid value "soon" for flag -max-delay`},
	} {
		if _, err := config(tc.args, envOf(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestRequestLogIsOnUnlessQuiet(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		log  bool
	}{
		{nil, nil, true},
		{[]string{"-quiet"}, nil, false},
		{nil, map[string]string{"GATEWITNESS_QUIET": "true"}, false},
		{[]string{"-quiet=false"}, map[string]string{"GATEWITNESS_QUIET": "1"}, true},
	} {
		cfg, err := config(tc.args, envOf(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Log != nil; got != tc.log {
			t.Errorf("config(%q, %v): request log %v, want %v", tc.args, tc.env, got, tc.log)
		}
		// Quiet also silences the servers' line per broken connection.
		if quietErrors := cfg.ErrorLog == io.Discard; quietErrors == tc.log {
			t.Errorf("config(%q, %v): error log silenced %v, want %v", tc.args, tc.env, quietErrors, !tc.log)
		}
	}
	if _, err := config(nil, envOf(map[string]string{"GATEWITNESS_QUIET": "maybe"})); err == nil || !strings.Contains(err.Error(), `GATEWITNESS_QUIET="maybe": accepted: true or false`) {
		t.Errorf("GATEWITNESS_QUIET=maybe: %v, want an error naming the variable", err)
	}
}
