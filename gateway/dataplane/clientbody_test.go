package dataplane_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestClientFramingErrorsAre4xx sends request bodies whose framing the
// client broke, to an HTTP/1.1 and to an h2c backend, and wants the
// gateway to answer 400 (the client's fault), not 502 (the backend's).
func TestClientFramingErrorsAre4xx(t *testing.T) {
	be := startBackend(t, "b")
	for _, h2c := range []bool{false, true} {
		ref := be.ref()
		if h2c {
			ref.AppProtocol = "kubernetes.io/h2c"
		}
		s := startGateway(t, oneListener(route("r", 0, nil, rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/")}, ref))))
		addr := mustAddr(t, s, 80)
		for _, tc := range []struct{ name, headers, body string }{
			{"bad chunk size", "Transfer-Encoding: chunked\r\n", "zz\r\nhello\r\n0\r\n\r\n"},
			{"chunk without its CRLF", "Transfer-Encoding: chunked\r\n", "5\r\nhelloXX3\r\nabc\r\n0\r\n\r\n"},
		} {
			status := rawRequest(t, addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\n"+tc.headers+"\r\n"+tc.body)
			if status != http.StatusBadRequest {
				t.Errorf("h2c backend %v, %s: status %d, want 400", h2c, tc.name, status)
			}
		}
	}
}

// rawRequest writes req on a new connection and returns the status of the
// answer.
func rawRequest(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprint(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", strings.SplitN(req, "\r\n", 2)[0], err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
