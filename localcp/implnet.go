package localcp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// implNetwork is the network namespace an implementation under test runs
// in, as a Pod has its own: it may bind any address and port there,
// the wildcard 0.0.0.0:80 included, without taking the host's. A veth
// pair joins it to the host (a link-local /30, as the Pods' has); the
// Gateway address range is local inside it (a route of type local on
// its lo, so any address of the range can be bound) and routed to it from
// the host, so the suite reaches every Gateway address. Its default route
// goes to the host, which forwards between this pair and the Pods' (the
// two host ends only: net.ipv4.conf.<if>.forwarding, not the host's
// ip_forward), so the implementation reaches every Pod IP. The API server
// listens on the host's 127.0.0.1, which the namespace cannot reach: a
// relay on the host's end of the pair forwards to it, and the
// implementation gets a kubeconfig naming the relay (with the serving
// certificate's name, localhost, as its TLS server name).
type implNetwork struct {
	vethNetns
	addresses  netip.Prefix
	kubeconfig string
	relay      net.Listener
	relayDone  sync.WaitGroup
}

const (
	implNetnsPrefix  = "gatewitness-impl-"
	implHostIfPrefix = "gwimpl"
	// maxRelayConns bounds the relay's connections to the API server.
	maxRelayConns = 256
)

// implAddressPool is where a free Gateway address range is picked from
// when none is given: a /24 of it that no address or route of the host
// uses.
var implAddressPool = netip.MustParsePrefix("10.246.0.0/16")

// createImplNetwork creates the namespace for an implementation with
// Gateway addresses from addresses (picked from implAddressPool when not
// valid), reaching the Pods through the pod network pods and the API
// server at apiServer (host:port on the host) through a relay. The
// kubeconfig written for it in dir is that of kubeconfig with the relay's
// address. An error says which step failed and leaves nothing behind.
func createImplNetwork(addresses netip.Prefix, pods *podNetwork, apiServer, kubeconfig, dir string) (_ *implNetwork, err error) {
	removeStaleNetworks(implNetnsPrefix, implHostIfPrefix)
	pid := os.Getpid()
	if !addresses.IsValid() {
		if addresses, err = freeImplAddresses(pid, pods); err != nil {
			return nil, err
		}
	}
	if err := checkImplAddresses(addresses); err != nil {
		return nil, err
	}
	veth, err := createVethNetns(implNetnsPrefix, implHostIfPrefix, "gwimpln")
	if err != nil {
		return nil, err
	}
	n := &implNetwork{vethNetns: *veth, addresses: addresses.Masked()}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	if err := ipCmd("-n", n.netns, "route", "add", "local", n.addresses.String(), "dev", "lo"); err != nil {
		return nil, err
	}
	if err := ipCmd("route", "add", n.addresses.String(), "via", n.nsIP.String(), "dev", n.hostIf, "src", n.hostIP.String()); err != nil {
		return nil, fmt.Errorf("%w; is another run routing %s (ip route show %s)? give this one other Gateway addresses", err, n.addresses, n.addresses)
	}
	for _, ifc := range []string{n.hostIf, pods.hostIf} {
		if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", ifc, "forwarding"), []byte("1"), 0o644); err != nil {
			return nil, fmt.Errorf("localcp: forwarding between the implementation's and the Pods' network namespaces on %s: %w", ifc, err)
		}
	}
	if n.relay, err = net.Listen("tcp", netip.AddrPortFrom(n.hostIP, 0).String()); err != nil {
		return nil, fmt.Errorf("localcp: the API server's relay for the implementation: %w", err)
	}
	n.relayDone.Add(1)
	go n.serveRelay(apiServer)
	n.kubeconfig = filepath.Join(dir, "kubeconfig-impl")
	if err := writeRelayKubeconfig(kubeconfig, n.kubeconfig, "https://"+n.relay.Addr().String()); err != nil {
		return nil, err
	}
	return n, nil
}

// checkImplAddresses refuses a range that cannot be routed to a namespace.
func checkImplAddresses(p netip.Prefix) error {
	if !p.Addr().Is4() || p.Addr().IsLoopback() || p.Addr().IsLinkLocalUnicast() || p.Addr().IsMulticast() || p.Addr().IsUnspecified() {
		return fmt.Errorf("localcp: Gateway addresses %s: the implementation runs in a network namespace of its own, and the host routes only a unicast IPv4 range to it (not loopback, link-local or multicast); want a private range such as %s, or none to have one picked", p, implAddressPool)
	}
	return nil
}

// freeImplAddresses picks a /24 of implAddressPool, starting from one
// chosen by pid, that overlaps no address of the host, no route of the
// host and not the Pod CIDR: so that several runs share a host.
func freeImplAddresses(pid int, pods *podNetwork) (netip.Prefix, error) {
	hosts, err := hostAddresses()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("localcp: %w", err)
	}
	var used []netip.Prefix
	for _, h := range hosts {
		used = append(used, h.prefix.Masked())
	}
	used = append(used, hostRoutes()...)
	if pods != nil {
		used = append(used, pods.podCIDR)
	}
	return pickFree(implAddressPool, 24, pid, used)
}

// pickFree returns the first prefix of length bits in pool, from the one
// numbered start on, that overlaps none of used.
func pickFree(pool netip.Prefix, bits, start int, used []netip.Prefix) (netip.Prefix, error) {
	count := 1 << (bits - pool.Bits())
	base := pool.Masked().Addr().As4()
	for i := range count {
		k := uint32((start + i) % count)
		v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
		v += k << (32 - bits)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits)
		free := true
		for _, u := range used {
			if u.Addr().Is4() && p.Overlaps(u) {
				free = false
				break
			}
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("localcp: no /%d of %s is free on this host for the Gateway addresses; give them with -gateway-addresses", bits, pool)
}

// hostRoutes lists the destinations of the host's IPv4 routes, but the
// default route.
func hostRoutes() []netip.Prefix {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return nil
	}
	var routes []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && (f[0] == "local" || f[0] == "broadcast" || f[0] == "unicast") {
			f = f[1:]
		}
		if len(f) == 0 || f[0] == "default" {
			continue
		}
		if p, err := netip.ParsePrefix(f[0]); err == nil {
			routes = append(routes, p.Masked())
		} else if a, err := netip.ParseAddr(f[0]); err == nil {
			routes = append(routes, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return routes
}

// serveRelay copies each connection to the relay to and from apiServer,
// at most maxRelayConns at a time, until the relay is closed.
func (n *implNetwork) serveRelay(apiServer string) {
	defer n.relayDone.Done()
	slots := make(chan struct{}, maxRelayConns)
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := n.relay.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		conns.Add(1)
		go func() {
			defer func() { <-slots; conns.Done() }()
			relayConn(c, apiServer)
		}()
	}
}

// relayConn copies c to a new connection to addr and back, until either
// side closes.
func relayConn(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

// writeRelayKubeconfig writes to path the kubeconfig from with every
// cluster's server set to server and its TLS server name to localhost,
// a name of the API server's serving certificate.
func writeRelayKubeconfig(from, path, server string) error {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return fmt.Errorf("localcp: reading %s: %w", from, err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
		c.TLSServerName = "localhost"
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("localcp: writing the implementation's kubeconfig: %w", err)
	}
	return nil
}

// command returns a command that runs sh -c script in the namespace.
func (n *implNetwork) command(script string) *exec.Cmd {
	return exec.Command("ip", "netns", "exec", n.netns, "sh", "-c", script)
}

// close stops the relay and removes the veth pair (and with it the
// route) and the namespace.
func (n *implNetwork) close() error {
	if n.relay != nil {
		n.relay.Close()
		n.relayDone.Wait()
	}
	return n.vethNetns.close()
}

// podCIDRPool is where FreePodCIDR picks a Pod CIDR from.
var podCIDRPool = netip.MustParsePrefix("10.244.0.0/16")

// FreePodCIDR returns the first /24 of 10.244.0.0/16 (DefaultPodCIDR
// first) that overlaps no address or route of this host, so that several
// control planes share a host with no flag: each routes its Pod CIDR, and
// the next one skips it.
func FreePodCIDR() (netip.Prefix, error) {
	hosts, err := hostAddresses()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("localcp: %w", err)
	}
	var used []netip.Prefix
	for _, h := range hosts {
		if h.iface != "lo" {
			used = append(used, h.prefix.Masked())
		}
	}
	return pickFree(podCIDRPool, 24, 0, append(used, hostRoutes()...))
}
