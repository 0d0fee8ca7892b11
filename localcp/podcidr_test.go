package localcp

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCheckPodCIDR(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		want []string // substrings of the error; none: accepted
	}{
		{cidr: DefaultPodCIDR},
		{cidr: "172.20.0.0/16"},
		{cidr: "10.244.0.7/24"}, // host bits are masked off
		{cidr: "100.64.0.0/30"},
		{cidr: "127.3.0.0/16", want: []string{"127.3.0.0/16", "loopback", "EndpointSlices", DefaultPodCIDR}},
		{cidr: "126.0.0.0/7", want: []string{"127.0.0.0/8", "loopback"}},
		{cidr: "169.254.10.0/24", want: []string{"link-local", "EndpointSlices"}},
		{cidr: "224.0.0.0/28", want: []string{"link-local multicast", "EndpointSlices"}},
		{cidr: "239.1.0.0/16", want: []string{"multicast"}},
		{cidr: "0.0.0.0/24", want: []string{"this network"}},
		{cidr: "240.0.0.0/24", want: []string{"reserved"}},
		{cidr: "10.96.4.0/24", want: []string{"Service CIDR 10.96.0.0/16"}},
		{cidr: "10.0.0.0/8", want: []string{"Service CIDR"}},
		{cidr: "10.244.0.0/31", want: []string{"/30 or wider"}},
		{cidr: "fd00::/64", want: []string{"IPv4"}},
	} {
		err := CheckPodCIDR(netip.MustParsePrefix(tc.cidr))
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("CheckPodCIDR(%s) = %v; want it accepted", tc.cidr, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckPodCIDR(%s) accepted it; want an error saying %q", tc.cidr, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckPodCIDR(%s) = %q; want it to say %q", tc.cidr, err, w)
			}
		}
	}
	if err := CheckPodCIDR(netip.Prefix{}); err == nil {
		t.Error("CheckPodCIDR(zero Prefix) accepted it; want an error")
	}
}

func TestCheckHostOverlap(t *testing.T) {
	host := []hostAddress{
		{iface: "lo", prefix: netip.MustParsePrefix("127.0.0.1/8")},
		{iface: "lo", prefix: netip.MustParsePrefix("10.244.0.5/32")}, // a Pod IP a control plane left
		{iface: "eth0", prefix: netip.MustParsePrefix("192.0.2.2/24")},
		{iface: "eth1", prefix: netip.MustParsePrefix("172.16.8.1/16")},
		{iface: "eth0", prefix: netip.MustParsePrefix("fd00::2/64")},
	}
	for _, tc := range []struct {
		cidr string
		want string // substring of the error; empty: accepted
	}{
		{cidr: "10.244.0.0/24"},
		{cidr: "192.0.3.0/24"},
		{cidr: "192.0.2.0/24", want: "192.0.2.2/24 on eth0"},
		{cidr: "192.0.2.128/25", want: "192.0.2.2/24 on eth0"},   // inside the host's network
		{cidr: "192.0.0.0/16", want: "192.0.2.2/24 on eth0"},     // around it
		{cidr: "172.16.200.0/24", want: "172.16.8.1/16 on eth1"}, // a neighbour's addresses
	} {
		err := checkHostOverlap(netip.MustParsePrefix(tc.cidr), host)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkHostOverlap(%s) = %v; want it accepted", tc.cidr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkHostOverlap(%s) = %v; want an error naming %q", tc.cidr, err, tc.want)
		}
	}
}

func TestHostAddresses(t *testing.T) {
	addrs, err := hostAddresses()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a.prefix.Addr().IsLoopback() && a.prefix.Addr().Is4() && a.prefix.Bits() == 8 {
			return
		}
	}
	t.Errorf("hostAddresses() = %v; want 127.0.0.1/8 among them (lo)", addrs)
}
