package dataplane

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/breakage"
)

func TestClientTimeout(t *testing.T) {
	if _, ok, err := clientTimeout(http.Header{}); ok || err != nil {
		t.Errorf("no header: ok %v err %v, want false, nil", ok, err)
	}
	if d, ok, err := clientTimeout(http.Header{"Grpc-Timeout": {"250m"}}); !ok || err != nil || d != 250*time.Millisecond {
		t.Errorf("250m: %v %v %v", d, ok, err)
	}
	if _, _, err := clientTimeout(http.Header{"Grpc-Timeout": {"1S", "2S"}}); err == nil || !strings.Contains(err.Error(), "2 values") {
		t.Errorf("two values: error %v, want one saying so", err)
	}
}

func TestCallBudget(t *testing.T) {
	const route, short, long = 10 * time.Second, 3 * time.Second, 60 * time.Second
	allow := grpcLimits{maxStream: route}
	deny := grpcLimits{maxStream: route, strictDeny: true}
	none := grpcLimits{}
	noneDeny := grpcLimits{strictDeny: true}
	tests := []struct {
		name      string
		lim       grpcLimits
		client    time.Duration
		hasClient bool
		f         breakage.GRPCTimeouts
		want      time.Duration
		src       budgetSource
	}{
		{"allow, client shorter", allow, short, true, breakage.GRPCTimeouts{}, short, budgetClient},
		{"allow, client longer", allow, long, true, breakage.GRPCTimeouts{}, route, budgetRoute},
		{"allow, client equal", allow, route, true, breakage.GRPCTimeouts{}, route, budgetRoute},
		{"allow, no client", allow, 0, false, breakage.GRPCTimeouts{}, route, budgetRoute},
		{"allow, client 0", allow, 0, true, breakage.GRPCTimeouts{}, 0, budgetClient},
		{"deny, client longer", deny, long, true, breakage.GRPCTimeouts{}, long, budgetClient},
		{"deny, client shorter", deny, short, true, breakage.GRPCTimeouts{}, short, budgetClient},
		{"deny, no client", deny, 0, false, breakage.GRPCTimeouts{}, route, budgetRoute},
		{"no limit, client", none, short, true, breakage.GRPCTimeouts{}, short, budgetClient},
		{"no limit, no client", none, 0, false, breakage.GRPCTimeouts{}, 0, budgetNone},
		{"no limit deny, no client", noneDeny, 0, false, breakage.GRPCTimeouts{}, 0, budgetNone},
		{"fault: client ignored", allow, short, true, breakage.GRPCTimeouts{IgnoreClientTimeout: true}, route, budgetRoute},
		{"fault: client ignored, no limit", none, short, true, breakage.GRPCTimeouts{IgnoreClientTimeout: true}, 0, budgetNone},
		{"fault: looser wins, client shorter", allow, short, true, breakage.GRPCTimeouts{LooserWins: true}, route, budgetRoute},
		{"fault: looser wins, client longer", allow, long, true, breakage.GRPCTimeouts{LooserWins: true}, long, budgetClient},
	}
	for _, tc := range tests {
		// The data plane's own Calls part, broken as tc.f says.
		calls := breakage.Build(breakage.Set{GRPC: tc.f}, ownParts(nil, nil)).Calls
		got, src := calls.Budget(tc.lim.maxStream, tc.lim.strictDeny, tc.client, tc.hasClient)
		if got != tc.want || src != tc.src {
			t.Errorf("%s: callBudget = %v from %v, want %v from %v", tc.name, got, src, tc.want, tc.src)
		}
	}
}
