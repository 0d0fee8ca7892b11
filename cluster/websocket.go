package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"golang.org/x/net/websocket"
	wsutil "sigs.k8s.io/gateway-api/conformance/utils/websocket"
)

// wsHandshakeTimeout bounds the dial, TLS and WebSocket handshakes of one
// Dial: upstream's Dialer has no context.
const wsHandshakeTimeout = 30 * time.Second

// WebSocketDialer returns upstream's websocket.Dialer dialing through
// DialContext, so ws:// and wss:// URLs naming a Gateway's address reach
// the data plane.
func (c *Cluster) WebSocketDialer() wsutil.Dialer { return wsDialer{c} }

type wsDialer struct{ c *Cluster }

// Dial opens a WebSocket connection to url with the given subprotocol (may
// be empty) and Origin header.
func (d wsDialer) Dial(url, protocol, origin string) (*websocket.Conn, error) {
	cfg, err := websocket.NewConfig(url, origin)
	if err != nil {
		return nil, fmt.Errorf("cluster: websocket URL %q, origin %q: %w", url, origin, err)
	}
	if protocol != "" {
		cfg.Protocol = []string{protocol}
	}
	loc := cfg.Location
	port := loc.Port()
	switch {
	case port != "":
	case loc.Scheme == "wss":
		port = "443"
	case loc.Scheme == "ws":
		port = "80"
	default:
		return nil, fmt.Errorf("cluster: websocket URL %q: scheme %q: accepted: ws or wss", url, loc.Scheme)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wsHandshakeTimeout)
	defer cancel()
	conn, err := d.c.DialContext(ctx, "tcp", net.JoinHostPort(loc.Hostname(), port))
	if err != nil {
		return nil, fmt.Errorf("cluster: websocket dial %s: %w", url, err)
	}
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if loc.Scheme == "wss" {
		tcfg := cfg.TlsConfig
		if tcfg == nil {
			tcfg = &tls.Config{}
		}
		tcfg = tcfg.Clone()
		if tcfg.ServerName == "" {
			tcfg.ServerName = loc.Hostname()
		}
		tc := tls.Client(conn, tcfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("cluster: websocket TLS handshake with %s: %w", url, err)
		}
		conn = tc
	}
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("cluster: websocket handshake with %s: %w", url, err)
	}
	conn.SetDeadline(time.Time{})
	return ws, nil
}
