package probeproxytest_test

import (
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
)

func TestListenRefusesUnknownBreakage(t *testing.T) {
	s, err := probeproxytest.Listen("127.0.0.1:0", probeproxy.Options{AppHost: "127.0.0.1"}, "no-such-breakage")
	if err == nil {
		s.Close()
		t.Fatal("Listen with an unknown breakage: no error")
	}
	if !strings.Contains(err.Error(), string(probeproxytest.TCPAlwaysUp)) {
		t.Errorf("error %q does not list the known breakages", err)
	}
}
