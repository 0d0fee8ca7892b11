package dataplane_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

// tlsGet sends GET https://addr/path with the given SNI and Host; h2 selects
// HTTP/2 through ALPN. It returns the response and the certificate's name.
func tlsGet(t *testing.T, addr, sni, host string, h2 bool) (*http.Response, []byte, string) {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{ServerName: sni, InsecureSkipVerify: true}, // the test checks the certificate itself
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/detect", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("SNI %s Host %s: %v", sni, host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("SNI %s Host %s: reading body: %v", sni, host, err)
	}
	return resp, body, resp.TLS.PeerCertificates[0].DNSNames[0]
}

func TestHTTPSListenersSNIAndMisdirectedRequests(t *testing.T) {
	b1, b2, b3 := startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3")
	https := func(name, hostname, certName string, r ir.HTTPRoute) ir.Listener {
		return ir.Listener{
			Name: name, Port: 443, Protocol: gwv1.HTTPSProtocolType, Hostname: hostname,
			Certificates: []tls.Certificate{testcert.New(t, certName).TLS},
			HTTPRoutes:   []ir.HTTPRoute{r},
		}
	}
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{
			https("https", "", "example.org", route("r1", 0, []string{"example.org"}, rule(nil, b1.ref()))),
			https("second", "second-example.org", "second-example.org", route("r2", 0, nil, rule(nil, b2.ref()))),
			https("wild", "*.wildcard.org", "*.wildcard.org", route("r3", 0, nil, rule(nil, b3.ref()))),
			https("fourth", "fourth-example.wildcard.org", "fourth-example.wildcard.org", route("r4", 0, nil, rule(nil, b1.ref()))),
		},
	}}}
	addr := mustAddr(t, startGateway(t, cfg), 443)

	tests := []struct {
		sni, host string
		status    int
		backend   string
		cert      string
	}{
		{"example.org", "example.org", 200, "b1", "example.org"},
		{"example.org", "second-example.org", 421, "", "example.org"},
		{"example.org", "unknown-example.org", 404, "", "example.org"},
		{"second-example.org", "second-example.org", 200, "b2", "second-example.org"},
		{"second-example.org", "example.org", 421, "", "second-example.org"},
		{"second-example.org", "unknown-example.org", 421, "", "second-example.org"},
		{"third-example.wildcard.org", "third-example.wildcard.org", 200, "b3", "*.wildcard.org"},
		{"third-example.wildcard.org", "fith-example.wildcard.org", 200, "b3", "*.wildcard.org"},
		{"third-example.wildcard.org", "fourth-example.wildcard.org", 421, "", "*.wildcard.org"},
		{"fourth-example.wildcard.org", "fourth-example.wildcard.org", 200, "b1", "fourth-example.wildcard.org"},
		{"fourth-example.wildcard.org", "fith-example.wildcard.org", 421, "", "fourth-example.wildcard.org"},
		{"unknown-example.org", "example.org", 200, "b1", "example.org"},
		{"unknown-example.org", "unknown-example.org", 404, "", "example.org"},
	}
	for _, h2 := range []bool{false, true} {
		for _, tc := range tests {
			resp, body, cert := tlsGet(t, addr, tc.sni, tc.host, h2)
			if wantProto := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != wantProto {
				t.Errorf("h2=%v SNI %s: protocol %s, want major %d", h2, tc.sni, resp.Proto, wantProto)
			}
			if cert != tc.cert {
				t.Errorf("h2=%v SNI %s: certificate for %s, want %s", h2, tc.sni, cert, tc.cert)
			}
			if resp.StatusCode != tc.status {
				t.Errorf("h2=%v SNI %s Host %s: status %d, want %d (body %q)", h2, tc.sni, tc.host, resp.StatusCode, tc.status, body)
				continue
			}
			if tc.backend != "" {
				if e := decode(t, resp, body); e.Backend != tc.backend || e.Headers.Get("X-Forwarded-Proto") != "https" {
					t.Errorf("h2=%v SNI %s Host %s: backend %s X-Forwarded-Proto %q, want %s https",
						h2, tc.sni, tc.host, e.Backend, e.Headers.Get("X-Forwarded-Proto"), tc.backend)
				}
			}
		}
	}
}
