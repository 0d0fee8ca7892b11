package dataplane

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestCoalescingConnKeepsOrder writes from several goroutines at once, as
// the HTTP/2 client's writers do, and wants every write to arrive whole and
// each goroutine's writes in order.
func TestCoalescingConnKeepsOrder(t *testing.T) {
	client, server := tcpPair(t)
	c := newCoalescingConn(client)
	const writers, each = 4, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				line := fmt.Sprintf("w%d %04d %s\n", w, i, bytes.Repeat([]byte{'x'}, i%300))
				if _, err := c.Write([]byte(line)); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	next := make([]int, writers)
	r := bufio.NewReader(server)
	server.SetReadDeadline(time.Now().Add(30 * time.Second))
	for range writers * each {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var w, i int
		if _, err := fmt.Sscanf(line, "w%d %d", &w, &i); err != nil || w < 0 || w >= writers {
			t.Fatalf("garbled line %q: %v", line, err)
		}
		want := fmt.Sprintf("w%d %04d %s\n", w, next[w], bytes.Repeat([]byte{'x'}, next[w]%300))
		if line != want {
			t.Fatalf("writer %d: got %q, want %q", w, line, want)
		}
		next[w]++
	}
	wg.Wait()
}

// TestCoalescingConnReportsWriteErrors closes the peer and wants a later
// Write to fail rather than to pile up bytes for ever.
func TestCoalescingConnReportsWriteErrors(t *testing.T) {
	client, server := tcpPair(t)
	c := newCoalescingConn(client)
	server.Close()
	deadline := time.Now().Add(30 * time.Second)
	chunk := bytes.Repeat([]byte{'x'}, 4096)
	for {
		_, err := c.Write(chunk)
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatalf("write error %v: want the connection's error", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a connection whose peer closed kept succeeding")
		}
	}
}
