package ir_test

import (
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0s":           0,
		"10s":          10 * time.Second,
		"250ms":        250 * time.Millisecond,
		"1m30s":        90 * time.Second,
		"1h2m3s4ms":    time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond,
		"99999ms":      99999 * time.Millisecond,
		"00001s":       time.Second,
		"1ms1ms1ms1ms": 4 * time.Millisecond, // the GEP's pattern does not forbid repeated units
	} {
		d := gwv1.Duration(in)
		got, err := ir.ParseDuration("retry.backoff", &d)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := ir.ParseDuration("retry.backoff", nil); got != 0 || err != nil {
		t.Errorf("ParseDuration(nil) = %v, %v; want 0, nil", got, err)
	}
	for _, in := range []string{"", "1", "1.5s", "-1s", "1us", "1d", "100000s", "1h1m1s1ms1s", " 1s", "1S", "1m 30s"} {
		d := gwv1.Duration(in)
		_, err := ir.ParseDuration("retry.backoff", &d)
		if err == nil || !strings.Contains(err.Error(), "retry.backoff") || !strings.Contains(err.Error(), "accepted form") {
			t.Errorf("ParseDuration(%q): error %v, want one naming retry.backoff and the accepted form", in, err)
		}
	}
}

// TestEachRequestBackend: the backends of HTTPRoute and GRPCRoute rules
// are visited, and can be changed through the pointer; mirrors and
// TLSRoute backends carry no retried requests and are not.
func TestEachRequestBackend(t *testing.T) {
	mirror := &ir.Backend{Name: "mirror"}
	g := ir.Gateway{Listeners: []ir.Listener{
		{HTTPRoutes: []ir.HTTPRoute{{Rules: []ir.HTTPRule{
			{Filters: []ir.HTTPFilter{{Mirror: mirror}}, Backends: []ir.HTTPBackend{{Backend: ir.Backend{Name: "h1"}}, {Backend: ir.Backend{Name: "h2"}}}},
		}}}},
		{GRPCRoutes: []ir.GRPCRoute{{Rules: []ir.GRPCRule{
			{Backends: []ir.GRPCBackend{{Backend: ir.Backend{Name: "g1"}}}},
		}}}},
		{TLSRoutes: []ir.TLSRoute{{Backends: []ir.Backend{{Name: "t1"}}}}},
	}}
	var names []string
	g.EachRequestBackend(func(b *ir.Backend) {
		names = append(names, b.Name)
		b.Weight = 7
	})
	if got := strings.Join(names, ","); got != "h1,h2,g1" {
		t.Errorf("visited %s, want h1,h2,g1", got)
	}
	if w := g.Listeners[1].GRPCRoutes[0].Rules[0].Backends[0].Weight; w != 7 {
		t.Errorf("GRPCRoute backend weight %d after the walk set 7: f got a copy", w)
	}
	if mirror.Weight != 0 || g.Listeners[2].TLSRoutes[0].Backends[0].Weight != 0 {
		t.Error("a mirror or TLSRoute backend was visited")
	}
}
