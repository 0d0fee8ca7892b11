package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
)

// TestGRPCClientBoundsConnections opens more (address, authority) targets
// than maxGRPCConns and checks that the least recently used are closed.
func TestGRPCClientBoundsConnections(t *testing.T) {
	g := &grpcClient{
		dial:  func(context.Context, string) (net.Conn, error) { return nil, errors.New("no network in this test") },
		conns: map[grpcTarget]*grpcConn{},
	}
	defer g.Close()
	first := grpcTarget{address: "127.1.0.1:80", authority: "host-0"}
	cc0, err := g.conn(first)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < maxGRPCConns+5; i++ {
		if i%2 == 0 {
			// Keep the first target in use: it must survive.
			if cc, err := g.conn(first); err != nil || cc != cc0 {
				t.Fatalf("same target gave another connection: %v", err)
			}
		}
		if _, err := g.conn(grpcTarget{address: "127.1.0.1:80", authority: fmt.Sprintf("host-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.conns) != maxGRPCConns {
		t.Errorf("%d connections kept, want the bound %d", len(g.conns), maxGRPCConns)
	}
	if g.conns[first] == nil {
		t.Error("the recently used first target was evicted")
	}
	if g.conns[grpcTarget{address: "127.1.0.1:80", authority: "host-1"}] != nil {
		t.Error("the least recently used target was kept")
	}
	g.Close()
	if _, err := g.conn(first); err == nil {
		t.Error("conn after Close succeeded")
	}
}
