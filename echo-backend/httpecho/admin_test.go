package httpecho_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
)

// The state lists every gRPC service whose health was set, through this
// endpoint or another (the gRPC Admin service), without naming them.
func TestStateListsGRPCServices(t *testing.T) {
	e := newEnv(t)
	c := viaHTTP.client(e)
	state := func(query string) map[string]string {
		t.Helper()
		resp, b := mustDo(t, c, "GET", e.httpURL+"/_gatewitness/admin/state"+query, "", "")
		var st httpecho.State
		if err := json.Unmarshal(b, &st); resp.StatusCode != 200 || err != nil {
			t.Fatalf("state: %d %s (%v)", resp.StatusCode, b, err)
		}
		return st.GRPCHealth
	}
	if got, want := state(""), map[string]string{"": "SERVING"}; !maps.Equal(got, want) {
		t.Errorf("fresh state: grpcHealth %v, want %v", got, want)
	}

	if err := e.controls.SetGRPCHealth("elsewhere.Svc", healthpb.HealthCheckResponse_NOT_SERVING); err != nil {
		t.Fatal(err)
	}
	if resp, b := mustDo(t, c, "POST", e.httpURL+"/_gatewitness/admin/grpc-health?service=foo&status=serving", "", ""); resp.StatusCode != 200 {
		t.Fatalf("grpc-health: %d %s", resp.StatusCode, b)
	}
	want := map[string]string{"": "SERVING", "elsewhere.Svc": "NOT_SERVING", "foo": "SERVING"}
	if got := state(""); !maps.Equal(got, want) {
		t.Errorf("grpcHealth %v, want %v", got, want)
	}
	// A named service never set is reported unknown.
	want["bar"] = "SERVICE_UNKNOWN"
	if got := state("?service=bar&service=foo"); !maps.Equal(got, want) {
		t.Errorf("grpcHealth with service=bar: %v, want %v", got, want)
	}

	// A bad name is rejected with the accepted form.
	long := strings.Repeat("n", 1025)
	resp, b := mustDo(t, c, "POST", e.httpURL+"/_gatewitness/admin/grpc-health?status=serving&service="+long, "", "")
	if resp.StatusCode != 400 || !strings.Contains(string(b), "service") || !strings.Contains(string(b), "at most 1024 bytes") {
		t.Errorf("service name of 1025 bytes: %d %s, want 400 naming the service and the limit", resp.StatusCode, b)
	}
}
