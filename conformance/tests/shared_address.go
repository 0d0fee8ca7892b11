package tests

import (
	"context"
	"fmt"
	"net"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// Many implementations give every Gateway of their class one address and
// serve the listeners of all Gateways on a port from one socket. Every
// gatewitness test has its own hostnames (and its own port where a
// listener's protocol must differ from the base Gateways'), so such an
// implementation runs them all beside each other. A test that needs a
// socket of its Gateway's own checks that premise first with
// requireOwnSocket, and skips saying which Gateway shares its address.

// requireOwnSocket skips t when a Gateway of another GatewayClass than
// the test's Gateway gw publishes the address of addr (gw's address, as
// the suite found it) and has a listener on one of gw's ports: one socket
// then serves both Gateways, and what the test checks of gw's class (why)
// cannot be told apart from the other Gateway's. Gateways of the same
// class may share the socket. A failure to list the Gateways fails t.
func requireOwnSocket(t *testing.T, s *suite.ConformanceTestSuite, gw *gwv1.Gateway, addr, why string) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.TimeoutConfig.GetTimeout)
	defer cancel()
	var list gwv1.GatewayList
	if err := s.Client.List(ctx, &list); err != nil {
		t.Fatalf("listing the Gateways, to check that Gateway %s/%s has a socket of its own: %v", gw.Namespace, gw.Name, err)
	}
	if other := sharingGateway(list.Items, gw, host); other != "" {
		t.Skipf("premise not met: Gateway %s/%s (class %s) has the address %s, and so does %s: the implementation serves both from one socket (a shared address), and this test needs a socket of its Gateway's own: %s. "+
			"Run it on an implementation that gives each Gateway (or each GatewayClass) its own address or port.", gw.Namespace, gw.Name, gw.Spec.GatewayClassName, host, other, why)
	}
}

// sharingGateway returns, as "Gateway ns/name (class c, port p)", a
// Gateway of items other than gw and of another class than gw's that
// publishes host and listens on one of gw's ports, or "".
func sharingGateway(items []gwv1.Gateway, gw *gwv1.Gateway, host string) string {
	ports := map[gwv1.PortNumber]bool{}
	for _, l := range gw.Spec.Listeners {
		ports[l.Port] = true
	}
	for _, g := range items {
		if g.Namespace == gw.Namespace && g.Name == gw.Name || g.Spec.GatewayClassName == gw.Spec.GatewayClassName {
			continue
		}
		hasHost := false
		for _, a := range g.Status.Addresses {
			hasHost = hasHost || a.Value == host
		}
		if !hasHost {
			continue
		}
		for _, l := range g.Spec.Listeners {
			if ports[l.Port] {
				return fmt.Sprintf("Gateway %s/%s (class %s, port %d)", g.Namespace, g.Name, g.Spec.GatewayClassName, l.Port)
			}
		}
	}
	return ""
}
