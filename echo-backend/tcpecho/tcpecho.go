// Package tcpecho is the echo-backend's TCP side: a line protocol compatible
// with echo-basic's TCP mode (TCP_ECHO_SERVER), served from a listener that
// can be closed and reopened at run time.
//
// On every connection the server first sends WelcomeMessage. It then reads
// lines (terminated by "\n"; a trailing "\r" is dropped) and answers each
// with one line:
//
//	PING      PONG
//	IS_TLS    true or false
//	TEST      the JSON of Assertions (the pod context and TLS details)
//	ACCEPTED  the number of connections the listener has accepted, in decimal
//	other     the line itself, echoed back
//
// The first three are echo-basic's commands and answers, so the upstream
// conformance helpers (utils/tcp) work unchanged; echo-basic ignores other
// lines, which this server echoes.
//
// ACCEPTED is gatewitness's: the count includes the asking connection and
// every connection the kernel handed to the server since it started,
// whether or not it completed a TLS handshake or sent a byte. Asking it
// before and after a client does something through a proxy shows how many
// connections the proxy opened to the backend meanwhile (the TLS inspect
// delay test expects none for a client that never sent its ClientHello).
//
// A Server implements control.Switch: SetOpen(false) closes the listening
// socket, so new connections are refused by the kernel, and SetOpen(true)
// listens again on the same address. Connections accepted before a close
// survive it unless Options.DropConnsOnClose is set.
package tcpecho

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
)

// WelcomeMessage is the first line sent on every connection, as echo-basic.
const WelcomeMessage = "Gateway API Test TCP Server\n"

// Defaults for the bounds in Options.
const (
	DefaultMaxLineBytes     = 64 << 10
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultHandshakeTimeout = 10 * time.Second
)

// Context is the pod context answered to TEST, with the ports as echo-basic
// reports them.
type Context struct {
	podinfo.Info
	TCPPort string `json:"tcpport"`
	TLSPort string `json:"tlsport,omitempty"`
}

// TLSInfo describes the TLS connection a TEST arrived on.
type TLSInfo struct {
	Version            string `json:"version"`
	ServerName         string `json:"serverName"`
	NegotiatedProtocol string `json:"negotiatedProtocol,omitempty"`
	Curves             string `json:"curves,omitempty"`
	CipherSuite        string `json:"cipherSuite"`
}

// Assertions is the JSON answer to TEST, field for field the one echo-basic
// sends.
type Assertions struct {
	Context
	IsTLS bool     `json:"isTLS"`
	TLS   *TLSInfo `json:"tls,omitempty"`
}

// Options configure a Server.
type Options struct {
	// Addr is the listen address, e.g. ":3000". A zero port picks a free
	// one on the first listen; reopening reuses the port picked.
	Addr string
	// Pod, TCPPort and TLSPort are answered to TEST.
	Pod     podinfo.Info
	TCPPort string
	TLSPort string
	// TLSConfig, when set, makes this a TLS listener: the handshake runs
	// before the welcome line, and IS_TLS answers true.
	TLSConfig *tls.Config
	// DropConnsOnClose makes SetOpen(false) also close every open
	// connection. By default they survive, as they would a real listener
	// being closed.
	DropConnsOnClose bool
	// MaxLineBytes bounds one input line; a longer line gets the answer
	// "ERROR line longer than N bytes" and the connection is closed.
	// Zero means DefaultMaxLineBytes.
	MaxLineBytes int
	// IdleTimeout closes a connection that sends no line for this long.
	// Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the TLS handshake. Zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// Server is a TCP echo server. Its methods are safe for concurrent use.
type Server struct {
	opts Options

	mu     sync.Mutex    // guards the listener; held while opening and closing it
	addr   string        // address to (re)listen on; fixed after the first listen
	ln     net.Listener  // nil while closed
	done   chan struct{} // closed when the current accept loop has exited
	closed bool          // Close was called

	// connMu guards conns and draining. It is separate from mu because the
	// accept loop takes it while SetOpen holds mu and waits for that loop.
	connMu   sync.Mutex
	conns    map[net.Conn]struct{}
	draining bool // Close was called: refuse to track new connections

	wg sync.WaitGroup // connection goroutines

	accepted atomic.Uint64 // connections accepted, over every listen
}

// New returns a server that is not listening yet; call SetOpen(true) or
// Listen to start it.
func New(opts Options) *Server {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	return &Server{opts: opts, addr: opts.Addr, conns: make(map[net.Conn]struct{})}
}

// ErrServerClosed is returned by SetOpen(true) after Close.
var ErrServerClosed = errors.New("tcpecho: server closed")

// Listen opens the listener; it is SetOpen(true).
func (s *Server) Listen() error { return s.SetOpen(true) }

// SetOpen opens or closes the listening socket. When it returns after
// closing, new connections are refused; when it returns after opening, they
// are accepted. Opening an open server or closing a closed one does nothing.
func (s *Server) SetOpen(open bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if open {
		return s.openLocked()
	}
	s.closeListenerLocked()
	if s.opts.DropConnsOnClose {
		s.closeConns()
	}
	return nil
}

// closeConns closes every tracked connection; their goroutines untrack them.
func (s *Server) closeConns() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

func (s *Server) openLocked() error {
	if s.closed {
		return ErrServerClosed
	}
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("tcpecho: listen on %q: %w", s.addr, err)
	}
	// Reopen on exactly the address first bound, so ":0" keeps its port.
	s.addr = ln.Addr().String()
	s.ln = ln
	done := make(chan struct{})
	s.done = done
	go s.acceptLoop(ln, done)
	return nil
}

// closeListenerLocked closes the listener and waits for its accept loop, so
// that no connection is accepted after it returns.
func (s *Server) closeListenerLocked() {
	if s.ln == nil {
		return
	}
	s.ln.Close()
	<-s.done
	s.ln, s.done = nil, nil
}

// IsOpen reports whether the listener accepts connections.
func (s *Server) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln != nil
}

// Addr is the address the server listens (or last listened) on. Before
// the first listen it is Options.Addr.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Accepted returns the number of connections the server has accepted since
// it was created, across closes and reopens of its listener. A connection
// counts from its accept, before any TLS handshake or byte.
func (s *Server) Accepted() uint64 { return s.accepted.Load() }

// Close closes the listener and every connection, and waits for their
// goroutines to finish. The server cannot be reopened.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.closeListenerLocked()
	s.mu.Unlock()
	s.connMu.Lock()
	s.draining = true
	s.connMu.Unlock()
	s.closeConns()
	s.wg.Wait()
	return nil
}

func (s *Server) acceptLoop(ln net.Listener, done chan struct{}) {
	defer close(done)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off so the loop
			// does not spin, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			<-t.C
			continue
		}
		backoff = 0
		s.accepted.Add(1)
		if !s.track(c) {
			c.Close()
			continue
		}
		go s.serve(c)
	}
}

// track registers c, unless the server is closing.
func (s *Server) track(c net.Conn) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.draining {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.connMu.Lock()
	delete(s.conns, c)
	s.connMu.Unlock()
	s.wg.Done()
}

func (s *Server) serve(raw net.Conn) {
	defer s.untrack(raw)
	defer raw.Close()

	var conn net.Conn = raw
	answer := Assertions{Context: Context{Info: s.opts.Pod, TCPPort: s.opts.TCPPort, TLSPort: s.opts.TLSPort}}
	if s.opts.TLSConfig != nil {
		tc := tls.Server(raw, s.opts.TLSConfig)
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.HandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return
		}
		st := tc.ConnectionState()
		answer.IsTLS = true
		answer.TLS = &TLSInfo{
			Version:            tls.VersionName(st.Version),
			ServerName:         st.ServerName,
			NegotiatedProtocol: st.NegotiatedProtocol,
			Curves:             st.CurveID.String(),
			CipherSuite:        tls.CipherSuiteName(st.CipherSuite),
		}
		conn = tc
	}
	testLine, err := json.Marshal(answer)
	if err != nil {
		return
	}
	testLine = append(testLine, '\n')

	if _, err := io.WriteString(conn, WelcomeMessage); err != nil {
		return
	}
	r := bufio.NewReaderSize(conn, 4096)
	for {
		if err := conn.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout)); err != nil {
			return
		}
		line, err := readLine(r, s.opts.MaxLineBytes)
		if errors.Is(err, errLineTooLong) {
			fmt.Fprintf(conn, "ERROR line longer than %d bytes\n", s.opts.MaxLineBytes)
			return
		}
		if err != nil {
			return
		}
		var out []byte
		switch string(line) {
		case "PING":
			out = []byte("PONG\n")
		case "IS_TLS":
			out = []byte(strconv.FormatBool(answer.IsTLS) + "\n")
		case "TEST":
			out = testLine
		case "ACCEPTED":
			out = strconv.AppendUint(nil, s.Accepted(), 10)
			out = append(out, '\n')
		default:
			out = append(line, '\n')
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one "\n"-terminated line of at most max bytes, without the
// terminator and a "\r" before it. A final line without "\n" is returned
// with a nil error; a clean end of input returns io.EOF.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max+2 { // room for "\r\n"
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				break
			}
			return nil, err
		}
		break
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > max {
		return nil, errLineTooLong
	}
	return line, nil
}

// FromEnv reads echo-basic's TCP-mode environment through getenv (os.Getenv
// in a main): TCP_PORT (default 3000) and TLS_PORT (default 8443), and
// TLS_SERVER_CERT and TLS_SERVER_PRIV_KEY, the paths of a PEM certificate and
// key. It returns the plain listener's options and, when both TLS variables
// are set, the TLS listener's; pod is the context answered to TEST.
func FromEnv(getenv func(string) string, pod podinfo.Info) (plain Options, tlsOpts *Options, err error) {
	tcpPort, err := envPort(getenv, "TCP_PORT", "3000")
	if err != nil {
		return Options{}, nil, err
	}
	tlsPort, err := envPort(getenv, "TLS_PORT", "8443")
	if err != nil {
		return Options{}, nil, err
	}
	plain = Options{Addr: ":" + tcpPort, Pod: pod, TCPPort: tcpPort, TLSPort: tlsPort}
	certFile, keyFile := getenv("TLS_SERVER_CERT"), getenv("TLS_SERVER_PRIV_KEY")
	if certFile == "" && keyFile == "" {
		return plain, nil, nil
	}
	if certFile == "" || keyFile == "" {
		return Options{}, nil, errors.New("TLS_SERVER_CERT and TLS_SERVER_PRIV_KEY: accepted: both set (paths of a PEM certificate and key) or both empty")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return Options{}, nil, fmt.Errorf("TLS_SERVER_CERT/TLS_SERVER_PRIV_KEY: loading key pair: %w", err)
	}
	t := plain
	t.Addr = ":" + tlsPort
	t.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return plain, &t, nil
}

func envPort(getenv func(string) string, name, def string) (string, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%s=%q: accepted: a port number from 0 to 65535", name, v)
	}
	return v, nil
}
