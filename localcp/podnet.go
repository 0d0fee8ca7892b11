package localcp

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// podNetwork is the network namespace the Pods of a control plane live in:
// their IPs are on its eth0, their echo-backend processes run in it, and a
// veth pair joins it to the host. The host routes the Pod CIDR to the
// namespace, so a gateway or an implementation running on the host reaches
// every Pod IP, while none of them is an address of the host. The veth
// pair's own /30 is link-local (169.254.0.0/16, clear of 169.254.169.0/24
// where clouds put their metadata service).
//
// The namespace, the veth pair and the route are named after the process
// (gatewitness-pods-<pid>, gwpods<pid>), so two control planes on one host
// keep theirs apart, and one left by a process that has died is removed
// by the next start.
type podNetwork struct {
	vethNetns
	podCIDR netip.Prefix
}

const (
	podNetnsPrefix  = "gatewitness-pods-"
	podHostIfPrefix = "gwpods"
	// podIf is the namespace's end of the veth pair, where Pod IPs go.
	podIf = "eth0"
)

// createPodNetwork creates the namespace, the veth pair and the route of
// podCIDR for this process, after removing those of dead processes. An
// error says which step failed and leaves nothing behind.
func createPodNetwork(podCIDR netip.Prefix) (*podNetwork, error) {
	removeStalePodNetworks()
	veth, err := createVethNetns(podNetnsPrefix, podHostIfPrefix, "gwpodn")
	if err != nil {
		return nil, err
	}
	n := &podNetwork{vethNetns: *veth, podCIDR: podCIDR}
	if err := ipCmd("route", "add", podCIDR.String(), "via", n.nsIP.String(), "dev", n.hostIf, "src", n.hostIP.String()); err != nil {
		err = fmt.Errorf("%w; is another control plane routing the Pod CIDR %s (ip route show %s)? give this one another -pod-cidr", err, podCIDR, podCIDR)
		return nil, errors.Join(err, n.close())
	}
	return n, nil
}

// addIP puts a Pod IP on the namespace's eth0.
func (n *podNetwork) addIP(ip netip.Addr) error {
	return ipCmd("-n", n.netns, "addr", "replace", ip.String()+"/32", "dev", podIf)
}

// delIP removes a Pod IP from the namespace's eth0.
func (n *podNetwork) delIP(ip netip.Addr) error {
	return ipCmd("-n", n.netns, "addr", "del", ip.String()+"/32", "dev", podIf)
}

// command returns a command that runs path with args in the namespace.
// ip netns exec execs path, so the command's process is path's.
func (n *podNetwork) command(path string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.netns, path}, args...)...)
}

// ipCmd runs ip with args; the error names the command and carries its
// output.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("localcp: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// removeStalePodNetworks removes the namespaces and veth pairs of
// processes that no longer run (a control plane killed before its Close).
func removeStalePodNetworks() { removeStaleNetworks(podNetnsPrefix, podHostIfPrefix) }

// removeStaleNetworks removes the namespaces named nsPrefix<pid>, and
// the veth pairs named ifPrefix<pid>, of processes that no longer run.
func removeStaleNetworks(nsPrefix, ifPrefix string) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		pid, err := strconv.Atoi(strings.TrimPrefix(name, nsPrefix))
		if !strings.HasPrefix(name, nsPrefix) || err != nil || processAlive(pid) {
			continue
		}
		stale := &vethNetns{netns: name, hostIf: ifPrefix + strconv.Itoa(pid)}
		_ = stale.close()
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// linkNets is where the veth pairs' /30s come from.
var linkNets = netip.MustParsePrefix("169.254.0.0/16")

// freeLinkNet returns a /30 of linkNets for the veth pair of process pid:
// one chosen from the pid, moved on past any that overlaps an address of
// the host or 169.254.169.0/24.
func freeLinkNet(pid int) (netip.Prefix, error) {
	addrs, err := hostAddresses()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("localcp: %w", err)
	}
	return pickLinkNet(pid, addrs)
}

// pickLinkNet is freeLinkNet with the host's addresses given.
func pickLinkNet(pid int, addrs []hostAddress) (netip.Prefix, error) {
	metadata := netip.MustParsePrefix("169.254.169.0/24")
	const count = 1 << 14 // /30s in a /16
	base := linkNets.Addr().As4()
	for i := range count {
		k := (pid + i) % count
		a := base
		a[2], a[3] = byte(k>>6), byte(k<<2)
		// The first address of the /30 is its network address; the
		// host's end is the next one.
		p := netip.PrefixFrom(netip.AddrFrom4(a), 30)
		if p.Overlaps(metadata) {
			continue
		}
		taken := false
		for _, h := range addrs {
			if h.prefix.Addr().Is4() && p.Overlaps(h.prefix.Masked()) {
				taken = true
				break
			}
		}
		if !taken {
			return netip.PrefixFrom(p.Addr().Next(), 30), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("localcp: no /30 of %s is free on this host for the Pods' veth pair", linkNets)
}
