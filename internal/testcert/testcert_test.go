package testcert_test

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/gatewitness/gatewitness/internal/testcert"
)

func TestHandshakeAgainstTheCertificate(t *testing.T) {
	c := testcert.New(t, "127.0.0.1", "*.example.com")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", c.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), c.ClientConfig())
	if err != nil {
		t.Fatalf("handshake with a client trusting only the pool: %v", err)
	}
	conn.Close()
	cert := c.TLS.Leaf
	if cert == nil {
		t.Fatal("no parsed leaf")
	}
	if err := cert.VerifyHostname("b.example.com"); err != nil {
		t.Fatalf("wildcard name: %v", err)
	}
	if err := cert.VerifyHostname("other.test"); err == nil {
		t.Fatal("a name not given verified")
	}
	if ip := net.ParseIP("127.0.0.1"); !cert.IPAddresses[0].Equal(ip) {
		t.Fatalf("IP SAN %v, want 127.0.0.1", cert.IPAddresses)
	}
}

func TestWriteFilesLoads(t *testing.T) {
	c := testcert.New(t)
	certFile, keyFile := c.WriteFiles(t)
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
}
