// Package echobackend composes the echo-backend's ports into one process:
// the HTTP, h2c and HTTPS echo ports (or the gRPC ports, or echo-basic's TCP
// mode), a TCP line-echo listener, one ledger and one set of run-time
// controls shared by all of them. cmd/echo-backend and the in-process pod
// runner both start backends through Start.
package echobackend

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
	"github.com/gatewitness/gatewitness/echo-backend/tcpecho"
)

// Mode selects what the process serves, as echo-basic's environment does.
type Mode int

// Modes.
const (
	ModeHTTP Mode = iota // HTTP on HTTPPort, h2c on H2CPort, HTTPS on HTTPSPort, TCP lines on TCPPort
	ModeGRPC             // GRPC_ECHO_SERVER: gRPC on HTTPPort, gRPC over TLS on HTTPSPort
	ModeTCP              // TCP_ECHO_SERVER: echo-basic's TCP protocol on TCPPort and TLSPort
)

func (m Mode) String() string {
	switch m {
	case ModeGRPC:
		return "grpc"
	case ModeTCP:
		return "tcp"
	}
	return "http"
}

// Config is what one backend process serves. Ports are strings as in the
// environment; "0" picks a free port and "" leaves that port closed.
type Config struct {
	Mode Mode
	// Host is the address every port binds to ("" for all interfaces). The
	// in-process pod runner gives each replica its own loopback address.
	Host string

	HTTPPort  string // HTTP/1.1 (ModeHTTP) or gRPC (ModeGRPC); default 3000
	H2CPort   string // HTTP/1.1 and HTTP/2 with prior knowledge (ModeHTTP); default 3001
	HTTPSPort string // TLS (ModeHTTP, ModeGRPC), only with a certificate; default 8443
	TCPPort   string // TCP line echo (ModeHTTP, default 3002) or echo-basic TCP (ModeTCP, default 3000)
	TLSPort   string // echo-basic TCP over TLS (ModeTCP), only with a certificate; default 8443

	// TLS serves HTTPSPort and TLSPort; nil leaves them closed.
	TLS *tls.Config

	Pod    podinfo.Info
	Limits fault.Limits
	Ledger ledger.Options

	// GRPCServing are gRPC services whose grpc.health.v1 status starts
	// SERVING (the server as a whole, "", always does; any other name
	// starts unknown until the Admin service sets it): a Pod whose
	// readiness probe checks one is Ready at its first probe.
	GRPCServing []string

	// Timeouts bound slow and silent clients on the HTTP ports (and, for
	// ReadHeader and Idle, the gRPC ports); zero fields take their
	// defaults (httpecho.Timeouts).
	Timeouts httpecho.Timeouts
	// ErrorLog gets the HTTP servers' own errors, such as a line per
	// connection that broke the protocol; nil leaves net/http's default
	// (standard error), io.Discard silences them.
	ErrorLog io.Writer

	// Log gets echo-basic's line for every echoed HTTP request (see
	// httpecho.Options.Log), from every HTTP port at once, so it must be
	// safe for concurrent use. Nil logs nothing. cmd/echo-backend sets it to
	// standard output; the in-process pod runner to the pod's log.
	Log io.Writer
}

// Environment variables read by ConfigFromEnv. The first group is
// echo-basic's; the second is ours.
const (
	EnvGRPCMode      = "GRPC_ECHO_SERVER"
	EnvTCPMode       = "TCP_ECHO_SERVER"
	EnvHTTPPort      = "HTTP_PORT"
	EnvH2CPort       = "H2C_PORT"
	EnvHTTPSPort     = "HTTPS_PORT"
	EnvTCPPort       = "TCP_PORT"
	EnvTLSPort       = "TLS_PORT"
	EnvCert          = "TLS_SERVER_CERT"
	EnvKey           = "TLS_SERVER_PRIVKEY"  // echo-basic's HTTP mode
	EnvKeyAlt        = "TLS_SERVER_PRIV_KEY" // echo-basic's gRPC and TCP modes
	EnvClientCAs     = "TLS_CLIENT_CACERTS"
	EnvLineTCPPort   = "GATEWITNESS_TCP_PORT"
	EnvMaxDelay      = "GATEWITNESS_MAX_DELAY"
	EnvLedgerTTL     = "GATEWITNESS_LEDGER_TTL"
	EnvLedgerIDs     = "GATEWITNESS_LEDGER_MAX_IDS"
	EnvLedgerEntries = "GATEWITNESS_LEDGER_MAX_ATTEMPTS"
	EnvLedgerBytes   = "GATEWITNESS_LEDGER_MAX_BYTES"
	EnvReadHeader    = "GATEWITNESS_READ_HEADER_TIMEOUT"
	EnvRead          = "GATEWITNESS_READ_TIMEOUT"
	EnvWrite         = "GATEWITNESS_WRITE_TIMEOUT"
	EnvIdle          = "GATEWITNESS_IDLE_TIMEOUT"
	EnvGRPCServing   = "GATEWITNESS_GRPC_SERVING"
)

// ConfigFromEnv reads the configuration the way echo-basic does, plus our
// own variables. getenv is os.Getenv in a main.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Pod: podinfo.Info{
		Namespace: getenv("NAMESPACE"),
		Ingress:   getenv("INGRESS_NAME"),
		Service:   getenv("SERVICE_NAME"),
		Pod:       getenv("POD_NAME"),
	}}
	switch {
	case getenv(EnvGRPCMode) != "":
		cfg.Mode = ModeGRPC
	case getenv(EnvTCPMode) != "":
		cfg.Mode = ModeTCP
	}
	var errs []error
	port := func(name, def string) string {
		v := getenv(name)
		if v == "" {
			return def
		}
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
			errs = append(errs, fmt.Errorf("%s=%q: accepted: a port number from 0 to 65535", name, v))
		}
		return v
	}
	switch cfg.Mode {
	case ModeHTTP:
		cfg.HTTPPort = port(EnvHTTPPort, "3000")
		cfg.H2CPort = port(EnvH2CPort, "3001")
		cfg.HTTPSPort = port(EnvHTTPSPort, "8443")
		cfg.TCPPort = port(EnvLineTCPPort, "3002")
	case ModeGRPC:
		cfg.HTTPPort = port(EnvHTTPPort, "3000")
		cfg.HTTPSPort = port(EnvHTTPSPort, "8443")
	case ModeTCP:
		cfg.TCPPort = port(EnvTCPPort, "3000")
		cfg.TLSPort = port(EnvTLSPort, "8443")
	}

	key := getenv(EnvKey)
	if key == "" {
		key = getenv(EnvKeyAlt)
	}
	tlsCfg, err := LoadTLS(getenv(EnvCert), key, getenv(EnvClientCAs))
	if err != nil {
		errs = append(errs, err)
	}
	cfg.TLS = tlsCfg

	duration := func(name string) time.Duration {
		v := getenv(name)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: accepted: a positive Go duration such as 5m", name, v))
		}
		return d
	}
	count := func(name string) int {
		v := getenv(name)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: accepted: a positive whole number", name, v))
		}
		return n
	}
	cfg.Limits.MaxDelay = duration(EnvMaxDelay)
	cfg.Ledger.TTL = duration(EnvLedgerTTL)
	cfg.Ledger.MaxIDs = count(EnvLedgerIDs)
	cfg.Ledger.MaxAttempts = count(EnvLedgerEntries)
	cfg.Ledger.MaxBytes = int64(count(EnvLedgerBytes))
	cfg.Timeouts.ReadHeader = duration(EnvReadHeader)
	cfg.Timeouts.Read = duration(EnvRead)
	cfg.Timeouts.Write = duration(EnvWrite)
	cfg.Timeouts.Idle = duration(EnvIdle)
	if v := getenv(EnvGRPCServing); v != "" {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				errs = append(errs, fmt.Errorf("%s=%q: accepted: comma-separated gRPC service names, none empty", EnvGRPCServing, v))
				break
			}
			cfg.GRPCServing = append(cfg.GRPCServing, name)
		}
	}
	return cfg, errors.Join(errs...)
}

// LoadTLS builds the server TLS configuration from PEM files. Both cert and
// key empty means no TLS. With clientCAs, client certificates are verified
// when given but not required, as echo-basic does.
func LoadTLS(certFile, keyFile, clientCAs string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%s and %s: accepted: both set (paths of a PEM certificate and key) or both empty", EnvCert, EnvKey)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS key pair %s, %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAs != "" {
		pem, err := os.ReadFile(clientCAs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvClientCAs, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s=%q: accepted: a file of PEM certificates; none found", EnvClientCAs, clientCAs)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// Backend is a running echo-backend.
type Backend struct {
	ledger   *ledger.Ledger
	controls *control.Controls

	mu     sync.Mutex
	addrs  map[string]string // listener name -> bound address
	closer []func() error
	errc   chan error
}

// Listener names, as recorded in the ledger and returned by Addr.
const (
	ListenerHTTP  = "http"
	ListenerH2C   = "h2c"
	ListenerHTTPS = "https"
	ListenerGRPC  = "grpc"
	ListenerGRPCS = "grpcs"
	ListenerTCP   = "tcp"
	ListenerTLS   = "tls"
)

// Start binds every configured port and serves them in the background. It
// returns once every socket is bound, so a caller can connect at once; on
// any error nothing is left running.
func Start(cfg Config) (*Backend, error) {
	b := &Backend{
		ledger:   ledger.New(cfg.Ledger),
		controls: control.New(),
		addrs:    map[string]string{},
		errc:     make(chan error, 8),
	}
	b.closer = append(b.closer, func() error { b.ledger.Close(); return nil })
	for _, name := range cfg.GRPCServing {
		if err := b.controls.SetGRPCHealth(name, healthpb.HealthCheckResponse_SERVING); err != nil {
			b.Close()
			return nil, fmt.Errorf("echo-backend: Config.GRPCServing: %w", err)
		}
	}
	if err := b.start(cfg); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Backend) start(cfg Config) error {
	switch cfg.Mode {
	case ModeHTTP:
		if err := b.serveHTTP(cfg, ListenerHTTP, cfg.HTTPPort, nil); err != nil {
			return err
		}
		if err := b.serveHTTP(cfg, ListenerH2C, cfg.H2CPort, nil); err != nil {
			return err
		}
		if cfg.TLS != nil {
			if err := b.serveHTTP(cfg, ListenerHTTPS, cfg.HTTPSPort, cfg.TLS); err != nil {
				return err
			}
		}
		if cfg.TCPPort != "" {
			return b.serveTCP(cfg, ListenerTCP, cfg.TCPPort, nil)
		}
	case ModeGRPC:
		if err := b.serveGRPC(cfg, ListenerGRPC, cfg.HTTPPort, nil); err != nil {
			return err
		}
		if cfg.TLS != nil {
			return b.serveGRPC(cfg, ListenerGRPCS, cfg.HTTPSPort, cfg.TLS)
		}
	case ModeTCP:
		if err := b.serveTCP(cfg, ListenerTCP, cfg.TCPPort, nil); err != nil {
			return err
		}
		if cfg.TLS != nil {
			return b.serveTCP(cfg, ListenerTLS, cfg.TLSPort, cfg.TLS)
		}
	default:
		return fmt.Errorf("echo-backend mode %d: accepted: http, grpc or tcp", cfg.Mode)
	}
	return nil
}

func (b *Backend) listen(cfg Config, name, port string) (net.Listener, error) {
	if port == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, port))
	if err != nil {
		return nil, fmt.Errorf("echo-backend %s port: %w", name, err)
	}
	b.mu.Lock()
	b.addrs[name] = ln.Addr().String()
	b.mu.Unlock()
	return ln, nil
}

func (b *Backend) serveHTTP(cfg Config, name, port string, tlsCfg *tls.Config) error {
	ln, err := b.listen(cfg, name, port)
	if err != nil || ln == nil {
		return err
	}
	ln = b.controls.Refusing(ln) // admin/refuse
	_, boundPort, _ := net.SplitHostPort(ln.Addr().String())
	srv := httpecho.NewServer(httpecho.Options{
		Pod:        cfg.Pod,
		HTTPPort:   boundPort,
		Ledger:     b.ledger,
		Controls:   b.controls,
		Limits:     cfg.Limits,
		Listener:   name,
		RequireH2C: name == ListenerH2C,
		Log:        cfg.Log,
		Timeouts:   cfg.Timeouts,
		ErrorLog:   cfg.ErrorLog,
	})
	b.closer = append(b.closer, srv.Close)
	serve := func() error { return srv.Serve(ln) }
	switch name {
	case ListenerH2C:
		serve = func() error { return srv.Serve(h2tap.Listener(ln)) }
	case ListenerHTTPS:
		srv.TLSConfig = tlsCfg.Clone()
		serve = func() error { return srv.ServeTLS(ln, "", "") }
	}
	go func() { b.report(name, serve()) }()
	return nil
}

func (b *Backend) serveGRPC(cfg Config, name, port string, tlsCfg *tls.Config) error {
	ln, err := b.listen(cfg, name, port)
	if err != nil || ln == nil {
		return err
	}
	srv := grpcecho.NewServer(grpcecho.Options{
		Pod:      cfg.Pod,
		Ledger:   b.ledger,
		Controls: b.controls,
		Limits:   cfg.Limits,
		TLS:      tlsCfg,
		Listener: name,

		HandshakeTimeout: cfg.Timeouts.ReadHeader,
		IdleTimeout:      cfg.Timeouts.Idle,
	})
	b.closer = append(b.closer, func() error { srv.Stop(); return nil })
	go func() { b.report(name, srv.Serve(ln)) }()
	return nil
}

func (b *Backend) serveTCP(cfg Config, name, port string, tlsCfg *tls.Config) error {
	s := tcpecho.New(tcpecho.Options{
		Addr:      net.JoinHostPort(cfg.Host, port),
		Pod:       cfg.Pod,
		TCPPort:   cfg.TCPPort,
		TLSPort:   cfg.TLSPort,
		TLSConfig: tlsCfg,
	})
	if err := s.Listen(); err != nil {
		return fmt.Errorf("echo-backend %s port: %w", name, err)
	}
	b.closer = append(b.closer, s.Close)
	b.mu.Lock()
	b.addrs[name] = s.Addr()
	b.mu.Unlock()
	if name == ListenerTCP {
		b.controls.SetTCPSwitch(s)
	}
	return nil
}

// report passes a server's unexpected end to Err.
func (b *Backend) report(name string, err error) {
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) || errors.Is(err, net.ErrClosed) {
		return
	}
	select {
	case b.errc <- fmt.Errorf("echo-backend %s port: %w", name, err):
	default:
	}
}

// Err delivers the first unexpected end of a port's server.
func (b *Backend) Err() <-chan error { return b.errc }

// Addr returns the bound address of a listener ("http", "h2c", "https",
// "grpc", "grpcs", "tcp", "tls"), or "" if it is not served.
func (b *Backend) Addr(listener string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.addrs[listener]
}

// Addrs returns every bound address by listener name.
func (b *Backend) Addrs() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := make(map[string]string, len(b.addrs))
	for k, v := range b.addrs {
		m[k] = v
	}
	return m
}

// Ledger is the backend's ledger.
func (b *Backend) Ledger() *ledger.Ledger { return b.ledger }

// Controls are the backend's run-time switches.
func (b *Backend) Controls() *control.Controls { return b.controls }

// Close stops every port and the ledger's expiry.
func (b *Backend) Close() error {
	var errs []error
	for i := len(b.closer) - 1; i >= 0; i-- {
		if err := b.closer[i](); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	b.closer = nil
	return errors.Join(errs...)
}
