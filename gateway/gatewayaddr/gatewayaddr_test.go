package gatewayaddr_test

import (
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/gatewayaddr"
)

func gateway(name string) *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func addressOf(t *testing.T, p *gatewayaddr.Pool, name string) string {
	t.Helper()
	got := p.ForGateway(gateway(name))
	if len(got) != 1 || got[0].Type == nil || *got[0].Type != gwv1.IPAddressType {
		t.Fatalf("ForGateway(%s) = %+v; want one IPAddress", name, got)
	}
	return got[0].Value
}

// TestPoolGivesStableAddressesUntilUsedUp checks a /30: its two inner
// addresses go to two Gateways, each keeps its own, and a third gets none.
func TestPoolGivesStableAddressesUntilUsedUp(t *testing.T) {
	p, err := gatewayaddr.New(netip.MustParsePrefix("127.9.0.0/30"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := addressOf(t, p, "a"), addressOf(t, p, "b"); a != "127.9.0.1" || b != "127.9.0.2" {
		t.Fatalf("addresses %s, %s; want 127.9.0.1, 127.9.0.2 (neither the first nor the last of the prefix)", a, b)
	}
	if a := addressOf(t, p, "a"); a != "127.9.0.1" {
		t.Fatalf("a asked again got %s; want its first address 127.9.0.1", a)
	}
	if got := p.ForGateway(gateway("c")); len(got) != 0 {
		t.Fatalf("a third Gateway in a /30 got %+v; want none (the prefix is used up)", got)
	}
	if addr, err := p.ListenAddr("ns", "b", 8080); err != nil || addr != "127.9.0.2:8080" {
		t.Fatalf("ListenAddr(ns/b, 8080) = %q, %v; want 127.9.0.2:8080", addr, err)
	}
	if _, err := p.ListenAddr("ns", "c", 80); err == nil || !strings.Contains(err.Error(), "used up") {
		t.Fatalf("ListenAddr of a Gateway without an address: %v; want an error saying the prefix is used up", err)
	}
	if gw, ok := p.Gateway("127.9.0.2"); !ok || gw != (types.NamespacedName{Namespace: "ns", Name: "b"}) {
		t.Fatalf("Gateway(127.9.0.2) = %v, %v; want ns/b", gw, ok)
	}
	if gw, ok := p.Gateway("127.9.0.3"); ok {
		t.Fatalf("Gateway(127.9.0.3) = %v; want none", gw)
	}
}

// TestPoolSharesASingleAddress checks that a /32 is every Gateway's address
// and names no one Gateway.
func TestPoolSharesASingleAddress(t *testing.T) {
	p, err := gatewayaddr.New(netip.MustParsePrefix("127.0.0.1/32"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := addressOf(t, p, "a"), addressOf(t, p, "b"); a != "127.0.0.1" || b != "127.0.0.1" {
		t.Fatalf("addresses %s, %s; want 127.0.0.1 for both", a, b)
	}
	if gw, ok := p.Gateway("127.0.0.1"); ok {
		t.Fatalf("Gateway(127.0.0.1) = %v with a shared address; want none", gw)
	}
}

func TestNewRefusesAPrefixWithNoInnerAddress(t *testing.T) {
	_, err := gatewayaddr.New(netip.MustParsePrefix("127.73.3.0/31"))
	if err == nil || !strings.Contains(err.Error(), "127.73.3.0/31 has no address for a Gateway") {
		t.Fatalf("New(/31): %v; want an error naming the prefix and the accepted forms", err)
	}
}
