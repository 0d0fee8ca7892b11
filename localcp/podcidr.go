package localcp

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// unusablePodRanges are the IPv4 ranges a Pod IP may not come from. The
// API server refuses the first four as EndpointSlice addresses (the
// controller manager's writes fail, the Services stay without endpoints,
// and every route to them answers 503); the others cannot be put on an
// interface and reached as a unicast address.
var unusablePodRanges = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback: the API server refuses loopback addresses in EndpointSlices, so Services would get no endpoints"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local: the API server refuses link-local addresses in EndpointSlices, so Services would get no endpoints"},
	{netip.MustParsePrefix("224.0.0.0/24"), "link-local multicast: the API server refuses these addresses in EndpointSlices, so Services would get no endpoints"},
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8): not a unicast address a backend can listen on; the API server refuses 0.0.0.0 in EndpointSlices"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast: not a unicast address a backend can listen on"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4): not a unicast address Linux routes"},
}

// CheckPodCIDR says whether p can be the Pod CIDR of a control plane: an
// IPv4 prefix of /30 or wider, clear of the ranges the API server or the
// host cannot use for Pod IPs (loopback, link-local, multicast, reserved),
// and of the Service CIDR. Start calls it; a command can call it to refuse
// a flag before starting anything. The error says why and what to use.
func CheckPodCIDR(p netip.Prefix) error {
	if !p.IsValid() {
		return fmt.Errorf("pod CIDR: not a prefix; want an IPv4 prefix such as %s", DefaultPodCIDR)
	}
	if !p.Addr().Is4() || p.Bits() > 30 {
		return fmt.Errorf("pod CIDR %s: want an IPv4 prefix of /30 or wider, such as %s", p, DefaultPodCIDR)
	}
	p = p.Masked()
	for _, u := range unusablePodRanges {
		if p.Overlaps(u.prefix) {
			return fmt.Errorf("pod CIDR %s overlaps %s, which is %s; want a private range such as %s", p, u.prefix, u.why, DefaultPodCIDR)
		}
	}
	if svc := netip.MustParsePrefix(serviceCIDR); p.Overlaps(svc) {
		return fmt.Errorf("pod CIDR %s overlaps the Service CIDR %s, where the API server allocates ClusterIPs; want a range clear of it, such as %s", p, svc, DefaultPodCIDR)
	}
	return nil
}

// CheckPodCIDROnHost refuses a Pod CIDR that overlaps a network of this
// host's interfaces other than lo (see checkHostOverlap). Start calls it
// after CheckPodCIDR.
func CheckPodCIDROnHost(p netip.Prefix) error {
	addrs, err := hostAddresses()
	if err != nil {
		return err
	}
	return checkHostOverlap(p, addrs)
}

// hostAddress is an address configured on one of the host's interfaces.
type hostAddress struct {
	iface  string
	prefix netip.Prefix // the address and its network's length
}

// hostAddresses lists the addresses of the host's interfaces.
func hostAddresses() ([]hostAddress, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("listing the host's interfaces: %w", err)
	}
	var out []hostAddress
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("listing the addresses of %s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, _ := ipn.Mask.Size()
			ip = ip.Unmap()
			if ip.Is4() && ones > 32 {
				ones -= 96
			}
			out = append(out, hostAddress{iface: ifc.Name, prefix: netip.PrefixFrom(ip, ones)})
		}
	}
	return out, nil
}

// checkHostOverlap refuses a Pod CIDR that overlaps a network of the
// host's other interfaces: the host routes the Pod CIDR to the Pods'
// network namespace, which would take over addresses of that network (the
// host's own, or its neighbours'). Addresses on lo inside the Pod CIDR
// are Pod IPs an earlier version of localcp put there, and are allowed.
func checkHostOverlap(p netip.Prefix, addrs []hostAddress) error {
	var clash []string
	for _, a := range addrs {
		if a.iface == "lo" || !a.prefix.Addr().Is4() {
			continue
		}
		if p.Overlaps(a.prefix.Masked()) {
			clash = append(clash, fmt.Sprintf("%s on %s", a.prefix, a.iface))
		}
	}
	if len(clash) > 0 {
		return fmt.Errorf("pod CIDR %s overlaps the host's network (%s): the route of the Pod CIDR to the Pods' network namespace would take over addresses of that network; want a range the host does not use, such as %s",
			p.Masked(), strings.Join(clash, ", "), DefaultPodCIDR)
	}
	return nil
}
