package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"

	"github.com/gatewitness/gatewitness/gateway/gatewayaddr"
	"github.com/gatewitness/gatewitness/gateway/sharedport"
)

// GatewayPrefix is the loopback range Gateway addresses come from. Nothing
// listens on them: DialContext maps them to the data plane's sockets.
const GatewayPrefix = "127.1.0.0/16"

// SharedGatewayAddress is the address of every Gateway when the reference
// gateway shares one (Gateway.SharedAddress).
const SharedGatewayAddress = "127.1.0.1"

// newAddresses is the pool of GatewayPrefix: each Gateway gets a stable
// address of it for the cluster's life; a Gateway deleted and created again
// gets the same one. With shared, every Gateway gets SharedGatewayAddress.
func newAddresses(shared bool) *gatewayaddr.Pool {
	prefix := netip.MustParsePrefix(GatewayPrefix)
	if shared {
		prefix = netip.PrefixFrom(netip.MustParseAddr(SharedGatewayAddress), 32)
	}
	p, err := gatewayaddr.New(prefix)
	if err != nil {
		panic(fmt.Sprintf("cluster: Gateway addresses %s: %v", prefix, err)) // constants
	}
	return p
}

// Resolve returns the address to dial for addr ("host:port"): for a
// Gateway's published address and a listener port, the data plane's socket
// serving it (with two replicas, Gateway.Replica, one of those listening
// on that port, at random); any other address unchanged. It fails when
// addr is a Gateway's but no replica has a listener on that port.
func (c *Cluster) Resolve(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("cluster: address %q: accepted: host:port: %w", addr, err)
	}
	gw, ok := c.addrs.Gateway(host)
	if c.shared && host == SharedGatewayAddress {
		gw, ok = types.NamespacedName{Namespace: sharedport.Namespace, Name: "every Gateway"}, true
	}
	if !ok {
		return addr, nil
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", fmt.Errorf("cluster: address %q: port %q: accepted: a number from 1 to 65535", addr, port)
	}
	if c.shared {
		gw.Name = sharedport.Name(int32(p))
	}
	// As the kernel spreads the connections of sockets bound with
	// SO_REUSEPORT: only over the replicas listening on the port, so a
	// replica that has not yet applied the snapshot with the listener
	// gets none, and one that still has it after the other removed it
	// gets them all.
	var listening []string
	for _, dp := range []DataPlane{c.dp, c.replica} {
		if dp == nil {
			continue
		}
		if real, ok := dp.Addr(gw.Namespace, gw.Name, int32(p)); ok {
			listening = append(listening, real)
		}
	}
	if len(listening) == 0 {
		return "", fmt.Errorf("cluster: Gateway %s (address %s) has no listener programmed on port %d: %w", gw, host, p, syscall.ECONNREFUSED)
	}
	return listening[rand.IntN(len(listening))], nil
}

// DialContext maps a Gateway's published address and listener port to the
// data plane's real socket, and dials anything else (pod IPs on loopback)
// directly. A Gateway port with no programmed listener fails as a refused
// connection would (errors.Is(err, syscall.ECONNREFUSED)).
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	target, err := c.Resolve(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, target)
}

// RoundTripper returns upstream's DefaultRoundTripper dialing through
// DialContext. Upstream's h2 and h2c-prior-knowledge transports do not use
// the dial hook, so for those protocols the request is sent to the resolved
// socket directly, with the Host header (and, for h2, the TLS server name)
// the test asked for.
func (c *Cluster) RoundTripper(cfg config.TimeoutConfig, debug bool) roundtripper.RoundTripper {
	return &roundTripper{
		c:  c,
		rt: &roundtripper.DefaultRoundTripper{Debug: debug, TimeoutConfig: cfg, CustomDialContext: c.DialContext},
	}
}

type roundTripper struct {
	c  *Cluster
	rt *roundtripper.DefaultRoundTripper
}

// DialContext is the cluster's DialContext. Tests that need connections of
// their own to a Gateway (see tests.DialContext in conformance/tests) find
// it through the suite's RoundTripper.
func (r *roundTripper) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return r.c.DialContext(ctx, network, addr)
}

// CaptureRoundTrip implements roundtripper.RoundTripper.
func (r *roundTripper) CaptureRoundTrip(req roundtripper.Request) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	if req.Protocol == roundtripper.H2Protocol || req.Protocol == roundtripper.H2CPriorKnowledgeProtocol {
		addr := req.URL.Host
		if req.URL.Port() == "" {
			port := "80"
			if req.URL.Scheme == "https" {
				port = "443"
			}
			addr = net.JoinHostPort(req.URL.Hostname(), port)
		}
		target, err := r.c.Resolve(addr)
		if err != nil {
			return nil, nil, err
		}
		if req.Host == "" {
			req.Host = req.URL.Host
		}
		req.URL.Host = target
	}
	return r.rt.CaptureRoundTrip(req)
}
