package dataplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Options configures a Server.
type Options struct {
	// BindHost is the interface the listener sockets bind to; the default is
	// "127.0.0.1". Ports are ephemeral: Addr reports the real socket of a
	// (gateway, listener port) pair.
	BindHost string
	// ListenAddr, when set, chooses the socket of each Gateway listener
	// port instead of BindHost and an ephemeral port: it returns the
	// "ip:port" to listen on for the port of the Gateway namespace/name,
	// typically an address of the Gateway's own and the listener's real
	// port, so clients reach the Gateway at its published address. Every
	// (Gateway, port) pair must get a distinct socket. It is called with
	// the Server's lock held and must not call back into the Server.
	ListenAddr func(namespace, name string, port int32) (string, error)
	// Listen, when set, opens each listener socket ("tcp" and the address
	// BindHost or ListenAddr gives) in place of net.Listen: a
	// net.ListenConfig whose Control sets SO_REUSEPORT lets several data
	// planes serve one address, the kernel spreading new connections over
	// their sockets, as replicas of a proxy on one host (or an old and a
	// new process across a restart) do. It is called with the Server's
	// lock held and must not call back into the Server.
	Listen func(network, address string) (net.Listener, error)
	// Logger receives errors and, at V(1), per-request details. The zero
	// value discards everything.
	Logger logr.Logger
	// Limits are the gateway's own bounds on a request (limits.go); zero
	// fields take the documented defaults.
	Limits Limits
}

// Server serves the listeners of a routing snapshot: one socket per
// (gateway, port), HTTP/1.1 and h2c on HTTP listeners, TLS with SNI and ALPN
// on HTTPS listeners, and TLS passthrough by SNI on TLS listeners
// (passthrough.go). It is safe for concurrent use.
type Server struct {
	bindHost   string
	listenAddr func(namespace, name string, port int32) (string, error)
	openSocket func(network, address string) (net.Listener, error) // Options.Listen, else net.Listen
	log        logr.Logger
	// parts are how the data plane retries, relays, times, sends upstream,
	// bounds gRPC calls and reloads (parts.go); set once by NewBroken.
	parts part.Parts

	snap atomic.Pointer[snapshot]

	mu     sync.Mutex // guards ports and closed
	ports  map[portKey]*portServer
	closed bool

	h1, h2c *http.Transport // shared upstream transports

	budgets budgets // retry budgets by Service, kept across snapshots (retrybudget.go)

	limits Limits      // defaults applied (limits.go)
	load   backendLoad // requests in flight by backend, kept across snapshots (limits.go); mu guards it
	// tunnels counts the upgraded connections open (Limits.MaxTunnels).
	tunnels atomic.Int64

	// ctx bounds background work (mirrors); cancelled by Close.
	ctx         context.Context
	cancel      context.CancelFunc
	mirrorSlots chan struct{}  // bounds mirrors in flight
	wg          sync.WaitGroup // serving goroutines
}

// maxMirrorsInFlight bounds concurrent mirrored requests; beyond it mirrors
// are dropped (mirroring is best effort by definition).
const maxMirrorsInFlight = 256

// New returns a Server serving nothing until Apply.
func New(opts Options) *Server { return NewBroken(opts, nil) }

// NewBroken is New with the parts build returns when handed the data
// plane's own (nil: its own): a data plane broken on purpose. The parts'
// types are internal, so only package dataplanetest (whose NewServer calls
// this) can hand a build over.
func NewBroken(opts Options, build func(own part.Parts) part.Parts) *Server {
	if opts.BindHost == "" {
		opts.BindHost = "127.0.0.1"
	}
	if opts.Listen == nil {
		opts.Listen = net.Listen
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		bindHost:    opts.BindHost,
		listenAddr:  opts.ListenAddr,
		openSocket:  opts.Listen,
		log:         opts.Logger,
		limits:      opts.Limits.withDefaults(),
		ports:       make(map[portKey]*portServer),
		h1:          newTransport(false),
		h2c:         newTransport(true),
		ctx:         ctx,
		cancel:      cancel,
		mirrorSlots: make(chan struct{}, maxMirrorsInFlight),
	}
	s.parts = ownParts(s.h1, s.h2c) // parts.go
	if build != nil {
		s.parts = build(s.parts)
	}
	s.snap.Store(&snapshot{ports: map[portKey]*portTable{}})
	return s
}

// portServer is one socket and the server behind it: an http.Server, or
// for a TLS passthrough port a passthroughServer.
type portServer struct {
	key         portKey
	https       bool
	passthrough bool
	timeouts    ir.ConnectionTimeouts // fixed for the socket's life: a change opens a new socket
	ln          net.Listener
	srv         *http.Server
	pass        *passthroughServer
}

// close closes the socket and its connections.
func (ps *portServer) close() error {
	if ps.pass != nil {
		return ps.pass.close()
	}
	return ps.srv.Close()
}

// Apply swaps the routing snapshot atomically: requests already in flight
// finish with the snapshot they started with, new requests see cfg. It opens
// sockets for new (gateway, port) pairs and closes those that are gone; a
// port that switches between HTTP and HTTPS gets a new socket.
// Listeners that cannot be served (an unknown protocol, HTTPS without a
// certificate, a socket that cannot be opened) are left out and named in the
// returned error; everything else is served. Apply keeps references into cfg,
// which must not be modified afterwards.
func (s *Server) Apply(cfg *ir.Config) error {
	snap, compileErr := compile(cfg)
	errs := []error{compileErr}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("dataplane: Apply called after Close")
	}
	var stale []*portServer
	for key, pt := range snap.ports {
		old := s.ports[key]
		if old != nil && old.https == pt.https && old.passthrough == pt.passthrough && old.timeouts == pt.timeouts {
			continue
		}
		if old != nil && s.listenAddr != nil {
			// The new socket takes the old one's address: free it first.
			old.close()
			delete(s.ports, key)
			old = nil
		}
		ps, err := s.listen(key, pt)
		if err != nil {
			errs = append(errs, fmt.Errorf("gateway %s/%s listeners %s (port %d): %w",
				key.namespace, key.name, listenerNames(pt), key.port, err))
			delete(snap.ports, key)
			continue
		}
		if old != nil {
			stale = append(stale, old)
		}
		s.ports[key] = ps
	}
	s.load.attach(snap) // before anyone can serve with snap
	s.snap.Store(snap)
	s.budgets.prune(budgetKeys(cfg))
	s.parts.Reload.Applied()
	for key, ps := range s.ports {
		if _, ok := snap.ports[key]; !ok {
			stale = append(stale, ps)
			delete(s.ports, key)
		}
	}
	for _, ps := range stale {
		ps.close()
	}
	return errors.Join(errs...)
}

func listenerNames(pt *portTable) string {
	names := make([]string, len(pt.listeners))
	for i, l := range pt.listeners {
		names[i] = fmt.Sprintf("%q", l.name)
	}
	return strings.Join(names, ", ")
}

// Addr returns the real socket address ("ip:port") serving the listener
// port of the Gateway namespace/name.
func (s *Server) Addr(namespace, name string, port int32) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.ports[portKey{namespace, name, port}]
	if !ok {
		return "", false
	}
	return ps.ln.Addr().String(), true
}

// Close closes every socket and connection, cancels mirrored requests and
// waits for the serving goroutines to return. A closed Server cannot be
// reused.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var errs []error
	for key, ps := range s.ports {
		if err := ps.close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", key, err))
		}
		delete(s.ports, key)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	// Holding every mirror slot means no mirror is in flight, and none can
	// start: mirrors only take a free slot.
	for range maxMirrorsInFlight {
		s.mirrorSlots <- struct{}{}
	}
	s.h1.CloseIdleConnections()
	s.h2c.CloseIdleConnections()
	return errors.Join(errs...)
}

// listen opens the socket for key and starts serving pt on it.
func (s *Server) listen(key portKey, pt *portTable) (*portServer, error) {
	https, t := pt.https, pt.timeouts
	addr := net.JoinHostPort(s.bindHost, "0")
	if s.listenAddr != nil {
		var err error
		if addr, err = s.listenAddr(key.namespace, key.name, key.port); err != nil {
			return nil, fmt.Errorf("choosing the socket: %w", err)
		}
	}
	ln, err := s.openSocket("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	ps := &portServer{key: key, https: https, passthrough: pt.passthrough, timeouts: t, ln: ln}
	if pt.passthrough {
		ps.pass = newPassthroughServer(s, key, ln, t)
		s.wg.Go(ps.pass.serve)
		return ps, nil
	}
	// HTTPS is decrypted below net/http (tlsListener, connguard.go), so
	// that the gateway follows the same bytes on every socket: net/http
	// serves each connection as cleartext HTTP/1.1 or HTTP/2 with prior
	// knowledge (the client preface, which ALPN "h2" leads to).
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	ps.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveHTTP(w, r, key) }),
		Protocols:         protocols,
		ReadHeaderTimeout: s.limits.RequestHeaderTimeout,  // limits.go
		IdleTimeout:       s.limits.IdleConnectionTimeout, // limits.go
		MaxHeaderBytes:    s.limits.MaxRequestHeaderBytes, // limits.go
		ErrorLog:          log.New(logWriter{s.log.WithValues("socket", key.String())}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return withConnectionTimeouts(s.ctx, t) },
		ConnContext:       withGuardedConn, // connguard.go
	}
	ps.srv.ConnState = clearWriteDeadline(s.parts.Reload.ConnState(t.Client))                 // clientwrite.go
	applyClientTimeout(ps.srv, t.Client)                                                      // conntimeouts.go
	var served net.Listener = bufferedListener{ln, s.limits.frameGuard(), s.parts.Relay.Conn} // bufconn.go
	if https {
		served = tlsListener{ln, &tls.Config{
			MinVersion:     tls.VersionTLS12,
			NextProtos:     []string{"h2", "http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) { return s.certificate(key, hello) },
		}, s.limits.frameGuard(), s.parts.Relay.Conn}
	}
	s.wg.Go(func() {
		err := ps.srv.Serve(served)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error(err, "serving stopped", "socket", key.String())
		}
	})
	return ps, nil
}

// certificate chooses the certificate of the listener whose hostname best
// matches the client's SNI; without SNI, or when no listener matches, the
// least specific listener on the port answers.
func (s *Server) certificate(key portKey, hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	pt := s.snap.Load().ports[key]
	if pt == nil || len(pt.listeners) == 0 {
		return nil, fmt.Errorf("no HTTPS listener is served on %s", key)
	}
	l := pt.selectListener(strings.ToLower(hello.ServerName))
	if l == nil {
		l = pt.listeners[len(pt.listeners)-1]
	}
	for i := range l.certs {
		if hello.SupportsCertificate(&l.certs[i]) == nil {
			return &l.certs[i], nil
		}
	}
	return &l.certs[0], nil
}

// logWriter turns http.Server's log lines into logr messages.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
