package sharedport_test

import (
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/sharedport"
)

func route(name string) ir.HTTPRoute {
	return ir.HTTPRoute{RouteMeta: ir.RouteMeta{Namespace: "ns", Name: name}}
}

// TestMerge: one Gateway per port, the first Gateway's timeouts; the
// listeners of one hostname merged, a route attached to both served
// once; another hostname a listener of its own; a listener whose
// protocol differs from the port's left out and named.
func TestMerge(t *testing.T) {
	first := ir.ConnectionTimeouts{Client: time.Second}
	cfg := &ir.Config{Gateways: []ir.Gateway{
		{Namespace: "ns", Name: "a", Timeouts: first, Listeners: []ir.Listener{
			{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: []ir.HTTPRoute{route("r1"), route("both")}},
			{Name: "https", Port: 443, Protocol: gwv1.HTTPSProtocolType},
		}},
		{Namespace: "ns", Name: "b", Timeouts: ir.ConnectionTimeouts{Client: time.Hour}, Listeners: []ir.Listener{
			{Name: "web", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: []ir.HTTPRoute{route("r2"), route("both")}},
			{Name: "named", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: "x.example", HTTPRoutes: []ir.HTTPRoute{route("r3")}},
			{Name: "tls", Port: 443, Protocol: gwv1.TLSProtocolType},
		}},
	}}
	got, err := sharedport.Merge(cfg)
	if err == nil || !strings.Contains(err.Error(), `gateway ns/b listener "tls" (port 443): protocol TLS, but the shared port serves HTTPS (listener "https")`) {
		t.Errorf("Merge error = %v; want the TLS listener named", err)
	}
	if len(got.Gateways) != 2 {
		t.Fatalf("Merge = %d Gateways; want one per port (80, 443)", len(got.Gateways))
	}
	p80 := got.Gateways[0]
	if p80.Namespace != sharedport.Namespace || p80.Name != sharedport.Name(80) || p80.Timeouts != first {
		t.Errorf("port 80's Gateway %s/%s timeouts %+v; want %s/%s with the first Gateway's", p80.Namespace, p80.Name, p80.Timeouts, sharedport.Namespace, sharedport.Name(80))
	}
	if len(p80.Listeners) != 2 {
		t.Fatalf("port 80 has %d listeners; want the merged one and x.example's", len(p80.Listeners))
	}
	var names []string
	for _, r := range p80.Listeners[0].HTTPRoutes {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "r1,both,r2" {
		t.Errorf("the merged listener's routes %v; want r1, both, r2 (both once)", names)
	}
	if h := p80.Listeners[1]; h.Hostname != "x.example" || len(h.HTTPRoutes) != 1 {
		t.Errorf("second listener %+v; want x.example with r3", h)
	}
	if len(cfg.Gateways[0].Listeners[0].HTTPRoutes) != 2 {
		t.Error("Merge modified its input")
	}
	if g := got.Gateways[1]; g.Name != sharedport.Name(443) || len(g.Listeners) != 1 || g.Listeners[0].Protocol != gwv1.HTTPSProtocolType {
		t.Errorf("port 443's Gateway %+v; want the HTTPS listener alone", g)
	}
}
