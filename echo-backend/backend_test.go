package echobackend_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and returns the
// file names and a pool trusting it.
func writeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	c := testcert.New(t, "127.0.0.1")
	certFile, keyFile = c.WriteFiles(t)
	return certFile, keyFile, c.Pool
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func start(t *testing.T, vars map[string]string) *echobackend.Backend {
	t.Helper()
	cfg, err := echobackend.ConfigFromEnv(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "127.0.0.1"
	b, err := echobackend.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// dialGRPC returns a plaintext client of b's gRPC port and a context that
// bounds the test's calls; both end with the test.
func dialGRPC(t *testing.T, b *echobackend.Backend) (*grpc.ClientConn, context.Context) {
	t.Helper()
	cc, err := grpc.NewClient(b.Addr("grpc"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return cc, ctx
}

type echoBody struct {
	Proto     string `json:"proto"`
	HTTPPort  string `json:"httpPort"`
	Pod       string `json:"pod"`
	RequestID string `json:"requestId"`
	Attempt   int    `json:"attempt"`
}

func getEcho(t *testing.T, c *http.Client, url string, hdr map[string]string) (int, echoBody) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var e echoBody
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("GET %s: decoding %q: %v", url, body, err)
		}
	}
	return resp.StatusCode, e
}

func TestHTTPModeServesEveryPort(t *testing.T) {
	certFile, keyFile, pool := writeCert(t)
	b := start(t, map[string]string{
		"HTTP_PORT": "0", "H2C_PORT": "0", "HTTPS_PORT": "0", "GATEWITNESS_TCP_PORT": "0",
		"TLS_SERVER_CERT": certFile, "TLS_SERVER_PRIVKEY": keyFile, "POD_NAME": "pod-a",
	})
	for _, n := range []string{"http", "h2c", "https", "tcp"} {
		if b.Addr(n) == "" {
			t.Fatalf("listener %s not served; have %v", n, b.Addrs())
		}
	}

	// HTTP/1.1, with a fault that fails the first attempt of an id.
	hdr := map[string]string{"X-Gatewitness-Id": "compose-1", "X-Gatewitness-Fault": "fail=1;status=503"}
	if code, _ := getEcho(t, http.DefaultClient, "http://"+b.Addr("http")+"/x", hdr); code != http.StatusServiceUnavailable {
		t.Fatalf("first attempt: status %d, want 503", code)
	}
	code, e := getEcho(t, http.DefaultClient, "http://"+b.Addr("http")+"/x", hdr)
	if code != http.StatusOK || e.Attempt != 2 || e.Pod != "pod-a" || e.RequestID != "compose-1" {
		t.Fatalf("second attempt: status %d, echo %+v; want 200, attempt 2, pod-a", code, e)
	}
	if _, port, _ := net.SplitHostPort(b.Addr("http")); e.HTTPPort != port {
		t.Fatalf("httpPort %q, want the bound port %q", e.HTTPPort, port)
	}
	entry, ok := b.Ledger().Get("compose-1")
	if !ok || len(entry.Attempts) != 2 {
		t.Fatalf("ledger of compose-1: %+v, want 2 attempts", entry)
	}

	// h2c with prior knowledge.
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	if code, e := getEcho(t, h2c, "http://"+b.Addr("h2c")+"/y", nil); code != 200 || e.Proto != "HTTP/2.0" {
		t.Fatalf("h2c: status %d proto %q, want 200 HTTP/2.0", code, e.Proto)
	}

	// TLS, negotiating h2.
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	if code, e := getEcho(t, tlsClient, "https://"+b.Addr("https")+"/z", nil); code != 200 || e.Proto != "HTTP/2.0" {
		t.Fatalf("https: status %d proto %q, want 200 HTTP/2.0", code, e.Proto)
	}

	// The TCP line echo, closed and reopened through the admin endpoint.
	tcpEcho(t, b.Addr("tcp"))
	post(t, "http://"+b.Addr("http")+"/_gatewitness/admin/tcp?open=false")
	if c, err := net.DialTimeout("tcp", b.Addr("tcp"), time.Second); err == nil {
		c.Close()
		t.Fatal("TCP listener still accepts after open=false")
	}
	post(t, "http://"+b.Addr("http")+"/_gatewitness/admin/tcp?open=true")
	tcpEcho(t, b.Addr("tcp"))
}

func post(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, body)
	}
}

// tcpEcho checks that a line sent to addr comes back.
func tcpEcho(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial tcp echo: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "hello gatewitness\n"); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("tcp echo: no echo of the line: %v", err)
		}
		if strings.Contains(line, "hello gatewitness") {
			return
		}
	}
}

func TestGRPCModeServesEchoHealthAndAdmin(t *testing.T) {
	certFile, keyFile, pool := writeCert(t)
	b := start(t, map[string]string{
		"GRPC_ECHO_SERVER": "1", "HTTP_PORT": "0", "HTTPS_PORT": "0",
		"TLS_SERVER_CERT": certFile, "TLS_SERVER_PRIV_KEY": keyFile,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for name, creds := range map[string]credentials.TransportCredentials{
		"grpc":  insecure.NewCredentials(),
		"grpcs": credentials.NewTLS(&tls.Config{RootCAs: pool}),
	} {
		cc, err := grpc.NewClient(b.Addr(name), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		if _, err := echopb.NewEchoClient(cc).Unary(ctx, &echopb.EchoRequest{}); err != nil {
			t.Fatalf("%s: Unary: %v", name, err)
		}
		if _, err := echopb.NewAdminClient(cc).SetGRPCHealth(ctx, &echopb.SetGRPCHealthRequest{
			Service: "svc-" + name, Status: echopb.ServingStatus_NOT_SERVING,
		}); err != nil {
			t.Fatalf("%s: SetGRPCHealth: %v", name, err)
		}
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "svc-" + name})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("%s: health of svc-%s: %v %v, want NOT_SERVING", name, name, resp, err)
		}
	}
}

func TestGRPCServingStartsTheNamedServicesServing(t *testing.T) {
	cc, ctx := dialGRPC(t, start(t, map[string]string{"GRPC_ECHO_SERVER": "1", "HTTP_PORT": "0", "GATEWITNESS_GRPC_SERVING": "probe, other"}))
	for service, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": healthpb.HealthCheckResponse_SERVING, "probe": healthpb.HealthCheckResponse_SERVING,
		"other": healthpb.HealthCheckResponse_SERVING,
	} {
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || resp.Status != want {
			t.Errorf("health of %q: %v %v, want %v", service, resp, err, want)
		}
	}
	// A name not listed is unknown until the Admin service sets it.
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "unlisted"}); status.Code(err) != codes.NotFound {
		t.Errorf("health of an unlisted service: %v, want NotFound", err)
	}
}

func TestTCPModeSpeaksEchoBasicTCP(t *testing.T) {
	b := start(t, map[string]string{"TCP_ECHO_SERVER": "1", "TCP_PORT": "0"})
	c, err := net.DialTimeout("tcp", b.Addr("tcp"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "Gateway API Test TCP Server") {
		t.Fatalf("welcome line %q, %v; want echo-basic's welcome", line, err)
	}
}

func TestConfigFromEnvNamesTheBadVariable(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"HTTP_PORT": "http"}, `HTTP_PORT="http": accepted: a port number`},
		{map[string]string{"GATEWITNESS_MAX_DELAY": "5"}, `GATEWITNESS_MAX_DELAY="5": accepted: a positive Go duration`},
		{map[string]string{"GATEWITNESS_LEDGER_MAX_IDS": "-1"}, `GATEWITNESS_LEDGER_MAX_IDS="-1": accepted: a positive whole number`},
		{map[string]string{"TLS_SERVER_CERT": "/x.crt"}, "TLS_SERVER_CERT and TLS_SERVER_PRIVKEY: accepted: both set"},
		{map[string]string{"GATEWITNESS_GRPC_SERVING": "a,,b"}, `GATEWITNESS_GRPC_SERVING="a,,b": accepted: comma-separated gRPC service names`},
	} {
		_, err := echobackend.ConfigFromEnv(env(tc.vars))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ConfigFromEnv(%v) = %v, want an error containing %q", tc.vars, err, tc.want)
		}
	}
}

func TestStartFailsCleanlyOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, taken, _ := net.SplitHostPort(ln.Addr().String())
	cfg, err := echobackend.ConfigFromEnv(env(map[string]string{"HTTP_PORT": "0", "H2C_PORT": taken, "GATEWITNESS_TCP_PORT": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "127.0.0.1"
	if _, err := echobackend.Start(cfg); err == nil || !strings.Contains(err.Error(), "h2c port") {
		t.Fatalf("Start with a taken h2c port: %v, want an error naming the h2c port", err)
	}
}

// lockedBuffer is a log writer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLogGetsALinePerEchoFromEveryHTTPPort(t *testing.T) {
	cfg, err := echobackend.ConfigFromEnv(env(map[string]string{"HTTP_PORT": "0", "H2C_PORT": "0", "GATEWITNESS_TCP_PORT": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	cfg.Host, cfg.Log = "127.0.0.1", log
	b, err := echobackend.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	if code, _ := getEcho(t, http.DefaultClient, "http://"+b.Addr("http")+"/one?a=b", nil); code != http.StatusOK {
		t.Fatalf("http: status %d", code)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	if code, _ := getEcho(t, h2c, "http://"+b.Addr("h2c")+"/two", nil); code != http.StatusOK {
		t.Fatalf("h2c: status %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	want := []string{"Echoing back request made to /one?a=b to client (127.0.0.1:", "Echoing back request made to /two to client (127.0.0.1:"}
	if len(lines) != len(want) {
		t.Fatalf("log:\n%s\nwant %d lines", log.String(), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to start %q", i, lines[i], want[i])
		}
	}
}
