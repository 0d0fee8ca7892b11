package dataplane_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
)

// rawResponse is what an HTTP/1.1 client read from a connection until the
// server closed it.
type rawResponse struct {
	status    int
	header    http.Header
	body      []byte // the body bytes received (de-chunked when chunked)
	bodyErr   error  // what ended the body early; nil when it was complete
	lastChunk bool   // a chunked body ended with its last-chunk
}

// rawGet sends one GET over a new connection to addr, reads the response
// the way a client that trusts nothing would, and then waits for the
// gateway to close the connection. It fails t when no response line came.
func rawGet(t *testing.T, addr, path string, headers ...string) rawResponse {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: gw.test\r\n", path)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", headers[i], headers[i+1])
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("GET %s: the gateway kept the connection open after %q", path, all)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(all)), nil)
	if err != nil {
		t.Fatalf("GET %s: no response (%v); the gateway sent %q", path, err, all)
	}
	out := rawResponse{status: resp.StatusCode, header: resp.Header}
	out.body, out.bodyErr = io.ReadAll(resp.Body)
	out.lastChunk = len(resp.TransferEncoding) > 0 && bytes.HasSuffix(all, []byte("0\r\n\r\n"))
	return out
}

// TestMidResponseFailureRelaysWhatArrived holds the relay of a response
// whose backend fails after sending its headers: the client gets the
// status, the headers and every body byte the backend sent, then sees the
// response end short (HTTP/1.1: the connection closes before the
// Content-Length, or without the last chunk). A gateway that drops what it
// buffered sends an empty reply, which clients take for a stale keep-alive
// connection and answer by sending the request again.
func TestMidResponseFailureRelaysWhatArrived(t *testing.T) {
	eb := startEcho(t)
	h1, h2c := echoRef("eb", false, eb), echoRef("eb-h2c", true, eb)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/h1", nil, h1),
		prefixRule("/h2c", nil, h2c),
	))), 80)

	for _, backend := range []string{"/h1", "/h2c"} {
		for _, spec := range []string{"reset=mid-body", "reset=after-headers", "chunks=2;reset=mid-body"} {
			t.Run(backend[1:]+"/"+spec, func(t *testing.T) {
				id := "relay-" + backend[1:] + "-" + spec
				got := rawGet(t, addr, backend+"/echo", echowire.IDHeader, id, echowire.FaultHeader, spec)
				if got.status != http.StatusOK {
					t.Fatalf("status %d, want the backend's 200", got.status)
				}
				if got.header.Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type %q, want the backend's application/json", got.header.Get("Content-Type"))
				}
				if got.bodyErr == nil {
					t.Errorf("the body (%d bytes) ended cleanly; want it cut short", len(got.body))
				}
				if got.lastChunk {
					t.Errorf("the chunked body ended with the last-chunk; want the connection closed without it")
				}
				if cl := got.header.Get("Content-Length"); cl != "" {
					if n, _ := strconv.Atoi(cl); len(got.body) >= n {
						t.Errorf("%d body bytes of a Content-Length of %s; want fewer", len(got.body), cl)
					}
				}
				if spec != "reset=after-headers" && h1Backend(backend) && len(got.body) == 0 {
					// Over HTTP/1.1 the backend's half body reaches the
					// gateway before the reset (over h2c the reset may
					// overtake it in the gateway's transport).
					t.Errorf("no body byte relayed; want the half body the backend sent")
				}
				ledgerAttempts(t, id, 1, eb)
			})
		}
	}
}

func h1Backend(path string) bool { return path == "/h1" }

// TestMidResponseFailureIsNotResent is the probe: a client on a
// reused keep-alive connection whose response fails mid-body must get the
// status and part of the body, and the backend must see the request once.
// An empty reply on a reused connection is what makes Go's transport (and
// curl) send a GET again.
func TestMidResponseFailureIsNotResent(t *testing.T) {
	eb := startEcho(t)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil, prefixRule("/", nil, echoRef("eb", false, eb))))), 80)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	get := func(id, spec string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/echo", nil)
		req.Host = "gw.test"
		req.Header.Set(echowire.IDHeader, id)
		if spec != "" {
			req.Header.Set(echowire.FaultHeader, spec)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
	for _, spec := range []string{"reset=mid-body", "reset=after-headers"} {
		t.Run(spec, func(t *testing.T) {
			if _, _, err := get("warm-"+spec, ""); err != nil { // leaves an idle connection to reuse
				t.Fatal(err)
			}
			id := "probe-" + spec
			resp, body, err := get(id, spec)
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("status %d, %d body bytes, read error %v; want 200 and an unexpected EOF", resp.StatusCode, len(body), err)
			}
			ledgerAttempts(t, id, 1, eb)
		})
	}
}

// TestMidResponseFailureResetsH2Stream: an HTTP/2 client gets the
// response's HEADERS (and the DATA that arrived), then a reset stream,
// never an END_STREAM.
func TestMidResponseFailureResetsH2Stream(t *testing.T) {
	eb := startEcho(t)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/h1", nil, echoRef("eb", false, eb)),
		prefixRule("/h2c", nil, echoRef("eb-h2c", true, eb)),
	))), 80)
	client := h2cClient()
	for _, backend := range []string{"/h1", "/h2c"} {
		for _, spec := range []string{"reset=mid-body", "reset=after-headers", "chunks=2;reset=mid-body"} {
			t.Run(backend[1:]+"/"+spec, func(t *testing.T) {
				id := "h2-" + backend[1:] + "-" + spec
				req, _ := http.NewRequest(http.MethodGet, "http://"+addr+backend+"/echo", nil)
				req.Host = "gw.test"
				req.Header.Set(echowire.IDHeader, id)
				req.Header.Set(echowire.FaultHeader, spec)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("no response headers: %v", err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || err == nil {
					t.Errorf("status %d, %d body bytes, read error %v; want 200 and a stream error", resp.StatusCode, len(body), err)
				}
				ledgerAttempts(t, id, 1, eb)
			})
		}
	}
}
