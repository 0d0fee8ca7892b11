package localcp

import (
	"errors"
	"net/netip"
	"os"
	"strconv"
)

// vethNetns is a network namespace joined to the host by a veth pair, the
// part the Pods' namespace and the implementation's share: the host's end
// (hostIf, hostIP) and the namespace's (podIf, nsIP) hold the two
// addresses of a link-local /30 (freeLinkNet), both ends and the
// namespace's lo are up, and the namespace's default route goes to the
// host's end. The namespace and the host's end are named after the
// process (nsPrefix<pid>, ifPrefix<pid>), so that removeStaleNetworks can
// find those of a process that has died.
type vethNetns struct {
	netns  string     // the namespace's name under /var/run/netns
	hostIf string     // the host's end of the veth pair
	hostIP netip.Addr // the host's end's address
	nsIP   netip.Addr // the namespace's end's address, on its podIf
}

// createVethNetns creates the namespace nsPrefix<pid> of this process and
// its veth pair (host end ifPrefix<pid>, namespace end peerPrefix<pid>
// until it is renamed podIf inside). An error says which step failed and
// leaves nothing behind.
func createVethNetns(nsPrefix, ifPrefix, peerPrefix string) (_ *vethNetns, err error) {
	pid := os.Getpid()
	link, err := freeLinkNet(pid)
	if err != nil {
		return nil, err
	}
	n := &vethNetns{
		netns:  nsPrefix + strconv.Itoa(pid),
		hostIf: ifPrefix + strconv.Itoa(pid),
		hostIP: link.Addr(),
		nsIP:   link.Addr().Next(),
	}
	peer := peerPrefix + strconv.Itoa(pid)
	if err := ipCmd("netns", "add", n.netns); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	steps := [][]string{
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", n.netns},
		{"-n", n.netns, "link", "set", peer, "name", podIf},
		{"addr", "add", netip.PrefixFrom(n.hostIP, 30).String(), "dev", n.hostIf},
		{"-n", n.netns, "addr", "add", netip.PrefixFrom(n.nsIP, 30).String(), "dev", podIf},
		{"link", "set", n.hostIf, "up"},
		{"-n", n.netns, "link", "set", podIf, "up"},
		{"-n", n.netns, "link", "set", "lo", "up"},
		{"-n", n.netns, "route", "add", "default", "via", n.hostIP.String()},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// close removes the veth pair (and with it the routes through it) and the
// namespace.
func (n *vethNetns) close() error {
	var errs []error
	if linkExists(n.hostIf) {
		errs = append(errs, ipCmd("link", "del", n.hostIf))
	}
	errs = append(errs, ipCmd("netns", "del", n.netns))
	return errors.Join(errs...)
}
