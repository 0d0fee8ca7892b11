// Package gatewayaddr gives each Gateway of the reference gateway an IP
// address from a prefix, as the controller's Addresses hook, and keeps it
// for the Gateway's name for the life of the Pool: a Gateway deleted and
// created again gets the same address. The embedded cluster (which maps the
// addresses to the data plane's sockets when tests dial them) and the
// standalone gateway (whose data plane listens on them) share it.
package gatewayaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Pool hands out the addresses of one prefix. Create it with New.
type Pool struct {
	prefix netip.Prefix
	single bool // the prefix is one address, shared by every Gateway

	mu     sync.Mutex
	byGW   map[types.NamespacedName]netip.Addr
	byAddr map[netip.Addr]types.NamespacedName
	next   netip.Addr
}

// New returns a Pool of p's addresses. A single address is shared by every
// Gateway; a larger prefix gives each Gateway its own address, neither the
// first nor the last of p, and needs at least 3 addresses.
func New(p netip.Prefix) (*Pool, error) {
	p = p.Masked()
	a := &Pool{prefix: p, single: p.IsSingleIP(), byGW: map[types.NamespacedName]netip.Addr{}, byAddr: map[netip.Addr]types.NamespacedName{}}
	if a.single {
		return a, nil
	}
	a.next = p.Addr().Next()
	if !p.Contains(a.next.Next()) {
		return nil, fmt.Errorf("%s has no address for a Gateway besides its first and last; want a single address (such as 127.0.0.1/32) or a prefix of at least 3 addresses (such as 127.1.0.0/16)", p)
	}
	return a, nil
}

// ForGateway is the controller's Options.Addresses hook. When the prefix is
// used up it returns none, and the controller reports the Gateway
// AddressNotAssigned.
func (a *Pool) ForGateway(gw *gwv1.Gateway) []gwv1.GatewayStatusAddress {
	ip, ok := a.lookup(types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}, true)
	if !ok {
		return nil
	}
	typ := gwv1.IPAddressType
	return []gwv1.GatewayStatusAddress{{Type: &typ, Value: ip.String()}}
}

// ListenAddr is the data plane's Options.ListenAddr hook: the Gateway's
// address and the listener's own port.
func (a *Pool) ListenAddr(namespace, name string, port int32) (string, error) {
	ip, ok := a.lookup(types.NamespacedName{Namespace: namespace, Name: name}, false)
	if !ok {
		return "", fmt.Errorf("Gateway %s/%s has no address: the prefix %s is used up", namespace, name, a.prefix)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port))), nil
}

// Gateway returns the Gateway whose address host is. With a single shared
// address no host names one Gateway, and it returns none.
func (a *Pool) Gateway(host string) (types.NamespacedName, bool) {
	ip, err := netip.ParseAddr(host)
	if err != nil || a.single {
		return types.NamespacedName{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	key, ok := a.byAddr[ip.Unmap()]
	return key, ok
}

// lookup returns the Gateway's address, allocating one if allocate is true
// and it has none.
func (a *Pool) lookup(key types.NamespacedName, allocate bool) (netip.Addr, bool) {
	if a.single {
		return a.prefix.Addr(), true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byGW[key]; ok {
		return ip, true
	}
	if !allocate || !a.prefix.Contains(a.next.Next()) { // keep the last address unused
		return netip.Addr{}, false
	}
	ip := a.next
	a.next = a.next.Next()
	a.byGW[key] = ip
	a.byAddr[ip] = key
	return ip, true
}
