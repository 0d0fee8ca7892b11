package probeproxytest_test

import (
	"testing"

	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
)

func TestMergeKeepsBothSides(t *testing.T) {
	got := probeproxytest.Merge(probeproxytest.Hooks{HTTPAlwaysUp: true}, probeproxytest.Hooks{GRPCAlwaysServing: true})
	if !got.HTTPAlwaysUp || got.TCPAlwaysUp || !got.GRPCAlwaysServing {
		t.Errorf("Merge = %+v: want HTTP and gRPC on, TCP off", got)
	}
}
