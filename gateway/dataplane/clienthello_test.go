package dataplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// captureClientHello returns the bytes a crypto/tls client sends first
// (its ClientHello records) when it dials with cfg.
func captureClientHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	client, server := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Client(client, cfg).HandshakeContext(ctx)
	}()
	raw, _, err := readClientHello(server)
	if err != nil {
		t.Fatalf("reading the ClientHello of a crypto/tls client: %v", err)
	}
	server.Close()
	client.Close()
	<-done
	return raw
}

func TestReadClientHelloFromCryptoTLS(t *testing.T) {
	cases := []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"TLS 1.3 with SNI", &tls.Config{ServerName: "abc.example.com", MinVersion: tls.VersionTLS13}, "abc.example.com"},
		{"TLS 1.2 only with SNI", &tls.Config{ServerName: "abc.example.com", MaxVersion: tls.VersionTLS12}, "abc.example.com"},
		{"upper case and trailing dot", &tls.Config{ServerName: "ABC.Example.COM."}, "abc.example.com"},
		{"ALPN and SNI", &tls.Config{ServerName: "x.test", NextProtos: []string{"h2", "http/1.1"}}, "x.test"},
		// crypto/tls sends no server_name for an IP literal (RFC 6066).
		{"IP literal: no SNI", &tls.Config{ServerName: "127.0.0.1", InsecureSkipVerify: true}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := captureClientHello(t, tc.cfg)
			// The capture is exactly the records: reading them again
			// from a reader with more bytes after them leaves those.
			r := io.MultiReader(bytes.NewReader(raw), strings.NewReader("after"))
			got, sni, err := readClientHello(r)
			if err != nil {
				t.Fatal(err)
			}
			if sni != tc.want {
				t.Errorf("SNI %q, want %q", sni, tc.want)
			}
			if !bytes.Equal(got, raw) {
				t.Errorf("read %d bytes, want the %d of the ClientHello", len(got), len(raw))
			}
			rest, _ := io.ReadAll(r)
			if string(rest) != "after" {
				t.Errorf("left %q unread, want %q: the reader must stop at the ClientHello's end", rest, "after")
			}
		})
	}
}

// refragment splits the handshake data of records into records of at most
// size bytes each, as a client may legally do.
func refragment(t *testing.T, records []byte, size int) []byte {
	t.Helper()
	var data []byte
	for r := records; len(r) > 0; {
		n := int(r[3])<<8 | int(r[4])
		data = append(data, r[5:5+n]...)
		r = r[5+n:]
	}
	var out []byte
	for len(data) > 0 {
		n := min(size, len(data))
		out = append(out, recordTypeHandshake, 3, 1, byte(n>>8), byte(n))
		out = append(out, data[:n]...)
		data = data[n:]
	}
	return out
}

func TestReadClientHelloAcrossRecords(t *testing.T) {
	raw := captureClientHello(t, &tls.Config{ServerName: "split.example.com"})
	for _, size := range []int{1, 3, 4, 5, 100} {
		split := refragment(t, raw, size)
		got, sni, err := readClientHello(bytes.NewReader(split))
		if err != nil {
			t.Fatalf("records of %d bytes: %v", size, err)
		}
		if sni != "split.example.com" || !bytes.Equal(got, split) {
			t.Errorf("records of %d bytes: SNI %q and %d of %d bytes", size, sni, len(got), len(split))
		}
	}
}

func TestReadClientHelloRejects(t *testing.T) {
	hello := captureClientHello(t, &tls.Config{ServerName: "abc.example.com"})
	withName := func(name string) []byte {
		// Replace the name in place (same length) and keep the framing.
		i := bytes.Index(hello, []byte("abc.example.com"))
		b := bytes.Clone(hello)
		copy(b[i:], name)
		return b
	}
	cases := []struct {
		name    string
		in      []byte
		notTLS  bool   // errNotClientHello, rather than a read error
		message string // part of the error
	}{
		{"HTTP request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), true, "record type 71"},
		{"SSLv2-style version", []byte{22, 2, 0, 0, 5, 1, 0, 0, 1, 0}, true, "record version 2.0"},
		{"empty record", []byte{22, 3, 1, 0, 0}, true, "record length 0"},
		{"oversized record", []byte{22, 3, 1, 0x40, 0x01}, true, "record length 16385"},
		{"ServerHello", []byte{22, 3, 3, 0, 4, 2, 0, 0, 0}, true, "handshake message type 2"},
		{"huge ClientHello", []byte{22, 3, 3, 0, 4, 1, 0x10, 0, 0}, true, "ClientHello of 1048576 bytes"},
		{"truncated body", []byte{22, 3, 3, 0, 6, 1, 0, 0, 2, 3, 3}, true, "truncated before its extensions"},
		{"bad host name", withName("abc.exa\x00ple.com"), true, "accepted: a DNS name"},
		{"nothing", nil, false, "EOF"},
		{"half a header", []byte{22, 3}, false, "unexpected EOF"},
		{"half a record", hello[:len(hello)/2], false, "unexpected EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readClientHello(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, errNotClientHello) != tc.notTLS || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q: want it to contain %q (not a ClientHello: %v)", err, tc.message, tc.notTLS)
			}
		})
	}
}

// TestReadClientHelloDeadline checks that a read deadline ends the wait
// with a timeout error that callers can tell apart.
func TestReadClientHelloDeadline(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, _, err := readClientHello(server)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("error %v, want a deadline exceeded", err)
	}
}

// FuzzReadClientHello checks that any input gives an answer without
// panicking, that what was read is a prefix of the input no longer than
// the limits allow, and that a name is only returned in its checked form.
func FuzzReadClientHello(f *testing.F) {
	f.Add(captureClientHello(f, &tls.Config{ServerName: "abc.example.com"}))
	f.Add(captureClientHello(f, &tls.Config{ServerName: "abc.example.com", MaxVersion: tls.VersionTLS12}))
	f.Add([]byte{22, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		raw, sni, err := readClientHello(bytes.NewReader(in))
		if !bytes.HasPrefix(in, raw) {
			t.Fatalf("read %d bytes that are not a prefix of the input", len(raw))
		}
		if len(raw) > maxClientHelloLen+4+recordHeaderLen*(maxClientHelloLen+4) {
			t.Fatalf("read %d bytes", len(raw))
		}
		if err != nil && sni != "" {
			t.Fatalf("error %v with SNI %q", err, sni)
		}
		if sni != "" {
			if checked, err := checkServerName(sni); err != nil || checked != sni {
				t.Fatalf("SNI %q is not in checked form (%q, %v)", sni, checked, err)
			}
		}
	})
}

// BenchmarkReadClientHello prices reading the SNI of a crypto/tls
// ClientHello (TLS 1.3, with its post-quantum key share).
func BenchmarkReadClientHello(b *testing.B) {
	raw := captureClientHello(b, &tls.Config{ServerName: "abc.example.com"})
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, sni, err := readClientHello(bytes.NewReader(raw)); err != nil || sni != "abc.example.com" {
			b.Fatal(sni, err)
		}
	}
}
