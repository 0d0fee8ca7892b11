package dataplanetest

import (
	"testing"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
)

func TestNewServerHealthy(t *testing.T) {
	s := NewServer(dataplane.Options{}, Hooks{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMergeKeepsBothSides(t *testing.T) {
	got := Merge(Hooks{TransportResends: true}, Hooks{GRPC: GRPCTimeouts{UnavailableOnExpiry: true}})
	if !got.TransportResends || !got.GRPC.UnavailableOnExpiry {
		t.Errorf("Merge = %+v: lost a side", got)
	}
}
