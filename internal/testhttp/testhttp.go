// Package testhttp holds the small HTTP helpers tests of several packages
// share: a free loopback address to bind, and a plain GET of a root path.
package testhttp

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// FreeLoopbackAddr returns a loopback socket address nothing listens on at
// the time of the call.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// GetRoot sends GET / to addr on a connection of its own and returns the
// body, failing t on any error or a status other than 200.
func GetRoot(t testing.TB, addr string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %q; want 200", addr, resp.StatusCode, body)
	}
	return string(body)
}
