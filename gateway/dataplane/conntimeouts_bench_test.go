package dataplane_test

import (
	"io"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// BenchmarkTunnelEcho prices the tunnel: 4 KiB written through an upgraded
// connection and echoed back by the backend, with every tunnel timeout set
// (so the watchdog and the activity stamps are on the path).
func BenchmarkTunnelEcho(b *testing.B) {
	backend := startUpgradeBackend(b)
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
			HTTPRoutes: []ir.HTTPRoute{route("r", 0, nil, prefixRule("/", nil,
				ir.Backend{Name: "default/b:80", Weight: 1, Endpoints: []string{backend.addr}}))}}},
		Timeouts: ir.ConnectionTimeouts{Client: time.Minute, Server: time.Minute, Tunnel: time.Minute, ClientFin: time.Minute, ServerFin: time.Minute},
	}}}
	s := dataplane.New(dataplane.Options{})
	b.Cleanup(func() { s.Close() })
	if err := s.Apply(cfg); err != nil {
		b.Fatal(err)
	}
	addr, _ := s.Addr("gw-ns", "gw", 80)
	conn, br, _ := upgrade(b, addr, "/echo")
	msg := make([]byte, 4<<10)
	got := make([]byte, len(msg))
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := conn.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, got); err != nil {
			b.Fatal(err)
		}
	}
}
