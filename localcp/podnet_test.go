package localcp

import (
	"net/netip"
	"testing"
)

func TestPickLinkNet(t *testing.T) {
	for _, tc := range []struct {
		name string
		pid  int
		host []hostAddress
		want string
	}{
		{name: "from the pid", pid: 5, want: "169.254.0.21/30"},
		{name: "wraps round the /16", pid: 1<<14 + 5, want: "169.254.0.21/30"},
		{name: "past the metadata /24", pid: 169 << 6, want: "169.254.170.1/30"},
		{
			name: "past a /30 the host uses", pid: 5,
			host: []hostAddress{{iface: "gwpods9", prefix: netip.MustParsePrefix("169.254.0.21/30")}},
			want: "169.254.0.25/30",
		},
		{
			name: "past a wider network of the host", pid: 0,
			host: []hostAddress{{iface: "eth1", prefix: netip.MustParsePrefix("169.254.0.9/24")}},
			want: "169.254.1.1/30",
		},
	} {
		got, err := pickLinkNet(tc.pid, tc.host)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: pickLinkNet(%d) = %v, %v; want %s", tc.name, tc.pid, got, err, tc.want)
		}
	}
	if _, err := pickLinkNet(1, []hostAddress{{iface: "eth1", prefix: netip.MustParsePrefix("169.254.0.1/16")}}); err == nil {
		t.Error("pickLinkNet with all of 169.254.0.0/16 taken: no error; want one")
	}
}
