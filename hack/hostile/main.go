// Command hostile probes the reference gateway's data plane with hostile
// clients side by side with Debian's nginx and HAProxy, all three in front
// of the same backend on loopback, and prints a Markdown table: per probe
// and proxy, what the client saw and the proxy's CPU time during the probe
// (/proc/PID/stat).
//
//	go run ./hack/hostile [-only re] [-flood 3s] [-slots 1100]
//
// Probes (every one bounded in count and time):
//   - floods of HTTP/2 frames that do no work (SETTINGS, PING,
//     WINDOW_UPDATE, empty DATA, empty CONTINUATION), one connection each,
//     for at most -flood: frames sent, when the proxy answered GOAWAY (and
//     with which code) or closed;
//   - rapid reset: 8 connections of 10,000 HEADERS+RST_STREAM each;
//   - chunked keep-alive: 4 clients sending chunked bodies for 5 s, then 4
//     with Content-Length: requests a second and connections opened;
//   - starvation: a zero-window HTTP/2 client (5 connections, 1,250 GETs of
//     16 KiB), -slots HTTP/1.1 clients that never read 2 MB answers, and
//     -slots idle WebSockets; meanwhile a second client checks 10 times:
//     how many of its checks got 200.
//
// nginx and haproxy are started from /usr/sbin with configurations written
// to a temporary directory (apt-get install -y nginx haproxy); a proxy
// that is missing is skipped with that command. The gateway runs as a
// child process of this command (hostile gateway), the backend too
// (hostile backend).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "backend":
			serveBackend()
			return
		case "gateway":
			serveGateway(os.Args[2:])
			return
		}
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

// serveBackend answers /big with ?n= bytes (16 KiB by default), an
// upgrade with 101 (then holds the connection), anything else with "ok".
func serveBackend() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr())
	zeros := make([]byte, 4<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			brw.Flush()
			_, _ = io.Copy(io.Discard, brw)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/big" {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			if n <= 0 || n > len(zeros) {
				n = 16 << 10
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			_, _ = w.Write(zeros[:n])
			return
		}
		_, _ = io.WriteString(w, "ok")
	}), ReadHeaderTimeout: time.Minute}
	_ = srv.Serve(ln)
}

// serveGateway runs the reference data plane with one catch-all route to
// -backend, its limits from the -limit-* flags.
func serveGateway(args []string) {
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	backend := fs.String("backend", "", "the backend's address")
	var limits dataplane.Limits
	limits.AddFlags(fs)
	_ = fs.Parse(args)
	s := dataplane.New(dataplane.Options{Limits: limits})
	prefix := gwv1.PathMatchPathPrefix
	slash := "/"
	cfg := &ir.Config{Gateways: []ir.Gateway{{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{{
		Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
		HTTPRoutes: []ir.HTTPRoute{{
			RouteMeta: ir.RouteMeta{Namespace: "ns", Name: "r"},
			Rules: []ir.HTTPRule{{
				Matches:  []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: &slash}}},
				Backends: []ir.HTTPBackend{{Backend: ir.Backend{Name: "ns/be:80", Weight: 1, Endpoints: []string{*backend}}}},
			}},
		}},
	}}}}}
	if err := s.Apply(cfg); err != nil {
		panic(err)
	}
	addr, _ := s.Addr("ns", "gw", 80)
	fmt.Println(addr)
	select {}
}

// proxy is one of the three under test.
type proxy struct {
	name   string
	h1, h2 string // addresses of its HTTP/1.1 and its cleartext HTTP/2 listener
	pid    int
}

// cpu returns the proxy's CPU time so far (user + system, all threads).
func (p *proxy) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // CLK_TCK 100
}

var (
	only      = flag.String("only", "", "run only the probes whose name matches this regexp")
	floodTime = flag.Duration("flood", 3*time.Second, "how long a flood lasts at most")
	slots     = flag.Int("slots", 1100, "slow readers and idle WebSockets of the starvation probes")
)

func run() error {
	flag.Parse()
	if *floodTime > 10*time.Second || *slots > 2000 {
		return errors.New("-flood is at most 10s and -slots at most 2000: the probes stay bounded")
	}
	dir, err := os.MkdirTemp("", "hostile")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var children []*exec.Cmd
	defer func() {
		for _, c := range children {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	start := func(name string, args ...string) (*exec.Cmd, string, error) {
		c := exec.Command(name, args...)
		out, _ := c.StdoutPipe()
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return nil, "", err
		}
		children = append(children, c)
		line, err := bufio.NewReader(out).ReadString('\n')
		return c, strings.TrimSpace(line), err
	}
	_, backend, err := start(self, "backend")
	if err != nil {
		return fmt.Errorf("starting the backend: %w", err)
	}
	gw, gwAddr, err := start(self, "gateway", "-backend", backend)
	if err != nil {
		return fmt.Errorf("starting the gateway: %w", err)
	}
	proxies := []*proxy{{name: "gateway", h1: gwAddr, h2: gwAddr, pid: gw.Process.Pid}}
	for _, p := range []func(string, string) (*proxy, *exec.Cmd, error){startNginx, startHAProxy} {
		px, c, err := p(dir, backend)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile: skipped:", err)
			continue
		}
		children = append(children, c)
		proxies = append(proxies, px)
	}
	for _, px := range proxies {
		if err := waitUp(px.h1); err != nil {
			return fmt.Errorf("%s: %w", px.name, err)
		}
	}

	fmt.Println("| probe | proxy | result | proxy CPU |")
	fmt.Println("|---|---|---|--:|")
	for _, pr := range probes {
		if *only != "" && !regexp.MustCompile(*only).MatchString(pr.name) {
			continue
		}
		for _, px := range proxies {
			before := px.cpu()
			result := pr.run(px)
			time.Sleep(300 * time.Millisecond) // let the proxy finish what the probe left it
			fmt.Printf("| %s | %s | %s | %.2f s |\n", pr.name, px.name, result, (px.cpu() - before).Seconds())
		}
	}
	return nil
}

// freePort returns a loopback address no one listens on now.
func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitUp(addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never listened: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

func startNginx(dir, backend string) (*proxy, *exec.Cmd, error) {
	const bin = "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		return nil, nil, errors.New("nginx is not installed (apt-get install -y nginx)")
	}
	h1, h2 := freePort(), freePort()
	prefix := filepath.Join(dir, "nginx")
	_ = os.MkdirAll(prefix, 0o755)
	conf := fmt.Sprintf(`daemon off; master_process off; worker_processes 1;
pid %[1]s/nginx.pid; error_log %[1]s/error.log;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fcgi; uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
  upstream be { server %[2]s; keepalive 64; }
  server {
    listen %[3]s; listen %[4]s http2;
    location / {
      proxy_pass http://be; proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection $connection_upgrade;
    }
  }
}
`, prefix, backend, h1, h2)
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, nil, err
	}
	c := exec.Command(bin, "-p", prefix, "-c", path)
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, nil, err
	}
	return &proxy{name: "nginx 1.22", h1: h1, h2: h2, pid: c.Process.Pid}, c, nil
}

func startHAProxy(dir, backend string) (*proxy, *exec.Cmd, error) {
	const bin = "/usr/sbin/haproxy"
	if _, err := os.Stat(bin); err != nil {
		return nil, nil, errors.New("haproxy is not installed (apt-get install -y haproxy)")
	}
	h1, h2 := freePort(), freePort()
	conf := fmt.Sprintf(`global
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout tunnel 1h
frontend f
  bind %s
  bind %s proto h2
  default_backend b
backend b
  http-reuse always
  server s1 %s
`, h1, h2, backend)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, nil, err
	}
	c := exec.Command(bin, "-f", path, "-db")
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, nil, err
	}
	return &proxy{name: "HAProxy 2.6", h1: h1, h2: h2, pid: c.Process.Pid}, c, nil
}

type probe struct {
	name string
	run  func(*proxy) string
}

var probes = []probe{
	{"SETTINGS flood", flood(nil, func(f *http2.Framer, _ int) error { return f.WriteSettings() })},
	{"PING flood", flood(nil, func(f *http2.Framer, i int) error { return f.WritePing(false, [8]byte{byte(i)}) })},
	{"WINDOW_UPDATE flood", flood(nil, func(f *http2.Framer, _ int) error { return f.WriteWindowUpdate(0, 1) })},
	{"empty DATA flood", flood(func(f *http2.Framer) error {
		return f.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("POST", "/"), EndHeaders: true})
	}, func(f *http2.Framer, _ int) error { return f.WriteData(1, false, nil) })},
	{"empty CONTINUATION flood", flood(func(f *http2.Framer) error {
		return f.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("GET", "/")})
	}, func(f *http2.Framer, _ int) error { return f.WriteContinuation(1, false, nil) })},
	{"rapid reset 8×10k", rapidReset},
	{"chunked keep-alive", chunkedKeepAlive},
	{"zero-window client", zeroWindow},
	{"HTTP/1.1 slow readers", slowReaders},
	{"idle WebSockets", idleWebSockets},
}

// headerBlock encodes a request's header block.
func headerBlock(method, path string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", method}, {":scheme", "http"}, {":authority", "probe.test"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return b.Bytes()
}

// h2conn dials addr and sends the preface and SETTINGS; frames are
// written through a buffer, flushed by the caller.
func h2conn(addr string, settings ...http2.Setting) (net.Conn, *http2.Framer, *bufio.Writer, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, nil, err
	}
	bw := bufio.NewWriterSize(c, 64<<10)
	f := http2.NewFramer(bw, c)
	f.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	_, _ = bw.WriteString(http2.ClientPreface)
	_ = f.WriteSettings(settings...)
	return c, f, bw, bw.Flush()
}

// ending reads a connection's frames until GOAWAY or its end, on a
// goroutine; the channel gets how it ended.
func ending(c net.Conn, f *http2.Framer, start time.Time) <-chan string {
	done := make(chan string, 1)
	go func() {
		for {
			fr, err := f.ReadFrame()
			if err != nil {
				done <- fmt.Sprintf("closed at %v", time.Since(start).Round(time.Millisecond))
				return
			}
			if ga, ok := fr.(*http2.GoAwayFrame); ok {
				done <- fmt.Sprintf("GOAWAY %v at %v", ga.ErrCode, time.Since(start).Round(time.Millisecond))
				return
			}
		}
	}()
	return done
}

// flood sends frames as fast as one connection takes them, for at most
// -flood, after setup.
func flood(setup func(*http2.Framer) error, send func(*http2.Framer, int) error) func(*proxy) string {
	return func(px *proxy) string {
		c, f, bw, err := h2conn(px.h2)
		if err != nil {
			return "dial: " + err.Error()
		}
		defer c.Close()
		if setup != nil {
			_ = setup(f)
		}
		start := time.Now()
		done := ending(c, f, start)
		sent := 0
		for time.Since(start) < *floodTime {
			select {
			case how := <-done:
				return fmt.Sprintf("%s, %d frames sent", how, sent)
			default:
			}
			for range 256 {
				if send(f, sent) != nil {
					break
				}
				sent++
			}
			_ = c.SetWriteDeadline(time.Now().Add(*floodTime))
			if bw.Flush() != nil {
				break
			}
		}
		select {
		case how := <-done:
			return fmt.Sprintf("%s, %d frames sent", how, sent)
		case <-time.After(500 * time.Millisecond):
			return fmt.Sprintf("open after %v, %d frames sent", *floodTime, sent)
		}
	}
}

// rapidReset opens and resets 10,000 streams on each of 8 connections.
func rapidReset(px *proxy) string {
	var wg sync.WaitGroup
	var goaways, sent atomic.Int64
	block := headerBlock("GET", "/")
	for range 8 {
		wg.Go(func() {
			c, f, bw, err := h2conn(px.h2)
			if err != nil {
				return
			}
			defer c.Close()
			done := ending(c, f, time.Now())
			for i := range 10000 {
				id := uint32(2*i + 1)
				if f.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true}) != nil ||
					f.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
					break
				}
				sent.Add(1)
				if i%64 == 63 && bw.Flush() != nil {
					break
				}
			}
			_ = bw.Flush()
			select {
			case how := <-done:
				if strings.HasPrefix(how, "GOAWAY") {
					goaways.Add(1)
				}
			case <-time.After(2 * time.Second):
			}
		})
	}
	wg.Wait()
	return fmt.Sprintf("%d streams sent, %d of 8 connections ended by GOAWAY", sent.Load(), goaways.Load())
}

// chunkedKeepAlive runs 4 clients with chunked bodies for 5 s, then 4
// with Content-Length.
func chunkedKeepAlive(px *proxy) string {
	var out []string
	for _, chunked := range []bool{true, false} {
		var dials, reqs atomic.Int64
		tr := &http.Transport{MaxIdleConnsPerHost: 4, DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, n, a)
		}}
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		end := time.Now().Add(5 * time.Second)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for time.Now().Before(end) {
					var body io.Reader = strings.NewReader("hello")
					if chunked {
						body = struct{ io.Reader }{body} // length unknown: chunked
					}
					resp, err := client.Post("http://"+px.h1+"/", "text/plain", body)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					reqs.Add(1)
				}
			})
		}
		wg.Wait()
		tr.CloseIdleConnections()
		what := map[bool]string{true: "chunked", false: "Content-Length"}[chunked]
		out = append(out, fmt.Sprintf("%s: %.0f req/s, %d connections", what, float64(reqs.Load())/5, dials.Load()))
	}
	return strings.Join(out, "; ")
}

// checks has a second client GET / 10 times, 300ms apart, and counts its
// 200s.
func checks(px *proxy) string {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	ok := 0
	var other []string
	for range 10 {
		resp, err := client.Get("http://" + px.h1 + "/")
		switch {
		case err != nil:
			other = append(other, "error")
		case resp.StatusCode == http.StatusOK:
			ok++
		default:
			other = append(other, strconv.Itoa(resp.StatusCode))
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		time.Sleep(300 * time.Millisecond) // the checks' pace
	}
	s := fmt.Sprintf("second client: %d of 10 checks 200", ok)
	if len(other) > 0 {
		s += " (others: " + strings.Join(other, " ") + ")"
	}
	return s
}

// zeroWindow opens 5 connections that grant no window, 250 GETs of 16 KiB
// each (or as many as the proxy allows at once), then checks.
func zeroWindow(px *proxy) string {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	block := headerBlock("GET", "/big")
	for range 5 {
		c, f, bw, err := h2conn(px.h2, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		if err != nil {
			return "dial: " + err.Error()
		}
		conns = append(conns, c)
		go func() { // read (and drop) what comes, acknowledging SETTINGS
			for {
				fr, err := f.ReadFrame()
				if err != nil {
					return
				}
				if s, ok := fr.(*http2.SettingsFrame); ok && !s.IsAck() {
					_ = f.WriteSettingsAck()
					_ = bw.Flush()
				}
			}
		}()
		for i := range 250 {
			_ = f.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block, EndStream: true, EndHeaders: true})
		}
		_ = bw.Flush()
	}
	time.Sleep(2 * time.Second) // the stalls settle
	return checks(px)
}

// slowReaders opens -slots HTTP/1.1 connections that ask for 2 MB and
// never read it, then checks.
func slowReaders(px *proxy) string {
	return holding(px, "GET /big?n=2097152 HTTP/1.1\r\nHost: probe.test\r\n\r\n")
}

// idleWebSockets opens -slots upgraded connections and leaves them idle,
// then checks.
func idleWebSockets(px *proxy) string {
	return holding(px, "GET /ws HTTP/1.1\r\nHost: probe.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
}

func holding(px *proxy, req string) string {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range *slots {
		c, err := net.DialTimeout("tcp", px.h1, 5*time.Second)
		if err != nil {
			break
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, req)
	}
	time.Sleep(2 * time.Second) // the stalls settle
	return fmt.Sprintf("%d held; %s", len(conns), checks(px))
}
