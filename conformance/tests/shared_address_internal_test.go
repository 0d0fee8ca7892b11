package tests

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestSharingGateway: a Gateway of another class with the test Gateway's
// address and one of its ports shares its socket; one of the same class,
// another address or other ports does not.
func TestSharingGateway(t *testing.T) {
	gateway := func(name, class, addr string, ports ...gwv1.PortNumber) gwv1.Gateway {
		g := gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		g.Spec.GatewayClassName = gwv1.ObjectName(class)
		for _, p := range ports {
			g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "l", Port: p})
		}
		g.Status.Addresses = []gwv1.GatewayStatusAddress{{Value: addr}}
		return g
	}
	own := gateway("own", "timeouts", "10.0.0.1", 80, 9443)
	for _, tt := range []struct {
		name  string
		other gwv1.Gateway
		want  string
	}{
		{"another class, same address and port", gateway("base", "suite", "10.0.0.1", 443, 9443), "Gateway ns/base (class suite, port 9443)"},
		{"same class", gateway("twin", "timeouts", "10.0.0.1", 80), ""},
		{"another address", gateway("base", "suite", "10.0.0.2", 80), ""},
		{"other ports", gateway("base", "suite", "10.0.0.1", 443), ""},
	} {
		got := sharingGateway([]gwv1.Gateway{own, tt.other}, &own, "10.0.0.1")
		if got != tt.want {
			t.Errorf("%s: sharingGateway = %q; want %q", tt.name, got, tt.want)
		}
	}
	if got := sharingGateway([]gwv1.Gateway{own}, &own, "10.0.0.1"); got != "" {
		t.Errorf("the Gateway alone: sharingGateway = %q; want none", got)
	}
}
