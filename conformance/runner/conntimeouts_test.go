package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/conformance/tests"
)

func TestConnectionTimeoutsOption(t *testing.T) {
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if o.ConnectionTimeouts != tests.DefaultConnectionTimeouts() {
		t.Errorf("default connection timeouts %+v, want %+v", o.ConnectionTimeouts, tests.DefaultConnectionTimeouts())
	}

	o, err = parse("--connection-timeouts", "serverTimeout=30s, tunnelTimeout=3600000,gatewayClassName=tuned")
	if err != nil {
		t.Fatal(err)
	}
	want := tests.DefaultConnectionTimeouts()
	want.Server, want.Tunnel, want.GatewayClassName = 30*time.Second, time.Hour, "tuned"
	if o.ConnectionTimeouts != want {
		t.Errorf("--connection-timeouts: %+v, want %+v", o.ConnectionTimeouts, want)
	}

	path := filepath.Join(t.TempDir(), "opts.yaml")
	file := "connectionTimeouts:\n  clientTimeout: 1m\n  tlsInspectDelay: \"500\"\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err = parse("--options-file", path, "--connection-timeouts", "clientFinTimeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	want = tests.DefaultConnectionTimeouts()
	want.Client, want.TLSInspectDelay, want.ClientFin = time.Minute, 500*time.Millisecond, 2*time.Second
	if o.ConnectionTimeouts != want {
		t.Errorf("options file then flag: %+v, want %+v", o.ConnectionTimeouts, want)
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--connection-timeouts", "serverTimeout"}, []string{"flag --connection-timeouts", "no '='"}},
		{[]string{"--connection-timeouts", "connectTimeout=1s"}, []string{"flag --connection-timeouts", `"connectTimeout"`, "accepted keys: gatewayClassName, clientTimeout"}},
		{[]string{"--connection-timeouts", "serverTimeout=soon"}, []string{"flag --connection-timeouts", "serverTimeout", "[0-9]+(us|ms|s|m|h|d)?"}},
	} {
		_, err := parse(c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("parse(%q) error = %v, want it to contain %q", c.args, err, w)
			}
		}
	}
	if err := os.WriteFile(path, []byte("connectionTimeouts:\n  tunnelTimeout: -5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parse("--options-file", path); err == nil || !strings.Contains(err.Error(), "connectionTimeouts: connection timeouts: tunnelTimeout") {
		t.Errorf("a negative tunnelTimeout in the options file: error %v, want one naming connectionTimeouts and the key", err)
	}
}
