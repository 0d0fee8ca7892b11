package dataplane_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/testhttp"
)

// TestListenAddrFixedSocket checks that Options.ListenAddr places a
// Gateway's listener port on the socket it names, and that a change that
// needs a new socket (other connection timeouts) reopens the same address
// rather than failing because the old socket still holds it.
func TestListenAddrFixedSocket(t *testing.T) {
	b := startBackend(t, "b")
	want := testhttp.FreeLoopbackAddr(t)
	var asked []string
	s := newServer(t, dataplane.Options{
		ListenAddr: func(namespace, name string, port int32) (string, error) {
			asked = append(asked, fmt.Sprintf("%s/%s:%d", namespace, name, port))
			return want, nil
		},
	})
	cfg := oneListener(route("r", 0, nil, rule(nil, b.ref())))
	if err := s.Apply(cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := mustAddr(t, s, 80); got != want {
		t.Fatalf("Addr(gw-ns, gw, 80) = %s; want %s, the address ListenAddr chose", got, want)
	}
	if len(asked) != 1 || asked[0] != "gw-ns/gw:80" {
		t.Fatalf("ListenAddr was called for %q; want once for gw-ns/gw:80", asked)
	}
	if body := testhttp.GetRoot(t, want); !strings.Contains(body, `"backend":"b"`) {
		t.Fatalf("body %q; want the echo of backend b", body)
	}

	cfg2 := oneListener(route("r", 0, nil, rule(nil, b.ref())))
	cfg2.Gateways[0].Timeouts = ir.ConnectionTimeouts{Client: 45 * time.Second}
	if err := s.Apply(cfg2); err != nil {
		t.Fatalf("Apply with new connection timeouts: %v", err)
	}
	if len(asked) != 2 {
		t.Fatalf("ListenAddr was called %d times; want 2 (a new socket for the new timeouts)", len(asked))
	}
	if got := mustAddr(t, s, 80); got != want {
		t.Fatalf("after the new timeouts Addr(gw-ns, gw, 80) = %s; want %s", got, want)
	}
	if body := testhttp.GetRoot(t, want); !strings.Contains(body, `"backend":"b"`) {
		t.Fatalf("after the new timeouts: body %q; want the echo of backend b", body)
	}
}

// TestListenAddrError checks that a Gateway whose socket cannot be chosen
// is left out, named in Apply's error with ListenAddr's reason, while
// another Gateway is served.
func TestListenAddrError(t *testing.T) {
	b := startBackend(t, "b")
	good := testhttp.FreeLoopbackAddr(t)
	s := newServer(t, dataplane.Options{
		ListenAddr: func(namespace, name string, port int32) (string, error) {
			if name == "bad" {
				return "", errors.New("no address left for this Gateway")
			}
			return good, nil
		},
	})
	err := s.Apply(badAndGood(b))
	if err == nil {
		t.Fatal("Apply succeeded; want an error for Gateway gw-ns/bad")
	}
	for _, part := range []string{"gw-ns/bad", "no address left for this Gateway"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Apply error %q does not contain %q", err, part)
		}
	}
	if _, ok := s.Addr("gw-ns", "bad", 80); ok {
		t.Error("Gateway gw-ns/bad is served; want it left out")
	}
	if body := testhttp.GetRoot(t, mustAddr(t, s, 80)); !strings.Contains(body, `"backend":"b"`) {
		t.Fatalf("body %q; want the echo of backend b from Gateway gw-ns/gw", body)
	}
}

// TestListenOpensTheSockets checks that Options.Listen opens every
// listener socket, at the address ListenAddr chose, and that a socket it
// refuses leaves its Gateway out with Listen's reason in Apply's error.
func TestListenOpensTheSockets(t *testing.T) {
	b := startBackend(t, "b")
	want := testhttp.FreeLoopbackAddr(t)
	var opened []string
	s := newServer(t, dataplane.Options{
		ListenAddr: func(_, name string, _ int32) (string, error) {
			if name == "bad" {
				return "127.0.0.1:1", nil
			}
			return want, nil
		},
		Listen: func(network, address string) (net.Listener, error) {
			opened = append(opened, network+" "+address)
			if address == "127.0.0.1:1" {
				return nil, errors.New("this socket is refused")
			}
			return net.Listen(network, address)
		},
	})
	err := s.Apply(badAndGood(b))
	if err == nil || !strings.Contains(err.Error(), "gw-ns/bad") || !strings.Contains(err.Error(), "this socket is refused") {
		t.Fatalf("Apply error %v; want one naming Gateway gw-ns/bad and Listen's reason", err)
	}
	if len(opened) != 2 || !slices.Contains(opened, "tcp "+want) {
		t.Fatalf("Listen opened %q; want two sockets, one of them tcp %s", opened, want)
	}
	if body := testhttp.GetRoot(t, mustAddr(t, s, 80)); !strings.Contains(body, `"backend":"b"`) {
		t.Fatalf("body %q; want the echo of backend b on the socket Listen opened", body)
	}
}

// badAndGood is two Gateways, gw-ns/bad and gw-ns/gw, each with an HTTP
// listener on port 80 whose one route sends everything to b: the tests
// refuse the socket of the first.
func badAndGood(b *testBackend) *ir.Config {
	listener := ir.Listener{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
		HTTPRoutes: []ir.HTTPRoute{route("r", 0, nil, rule(nil, b.ref()))}}
	return &ir.Config{Gateways: []ir.Gateway{
		{Namespace: "gw-ns", Name: "bad", Listeners: []ir.Listener{listener}},
		{Namespace: "gw-ns", Name: "gw", Listeners: []ir.Listener{listener}},
	}}
}
