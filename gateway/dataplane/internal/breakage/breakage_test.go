package breakage

import (
	"testing"

	"github.com/gatewitness/gatewitness/internal/hookset"
)

// TestSetMerges: every hook point of Set is of a kind hookset.Merge adds
// (it panics, naming the field, otherwise).
func TestSetMerges(t *testing.T) {
	got := hookset.Merge(Set{TransportResends: true}, Set{GRPC: GRPCTimeouts{LooserWins: true}})
	if !got.TransportResends || !got.GRPC.LooserWins {
		t.Errorf("Merge = %+v: lost a side", got)
	}
}
