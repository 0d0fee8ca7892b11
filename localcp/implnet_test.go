package localcp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestPickFree(t *testing.T) {
	pool := netip.MustParsePrefix("10.246.0.0/16")
	for _, tc := range []struct {
		name  string
		start int
		used  []string
		want  string
	}{
		{name: "from the start", start: 3, want: "10.246.3.0/24"},
		{name: "wraps round", start: 256 + 3, want: "10.246.3.0/24"},
		{name: "past a used /24", start: 3, used: []string{"10.246.3.0/24"}, want: "10.246.4.0/24"},
		{name: "past a host address and a route", start: 3, used: []string{"10.246.3.7/32", "10.246.4.0/23"}, want: "10.246.6.0/24"},
		{name: "past a wider route", start: 0, used: []string{"10.246.0.0/17"}, want: "10.246.128.0/24"},
	} {
		var used []netip.Prefix
		for _, u := range tc.used {
			used = append(used, netip.MustParsePrefix(u))
		}
		got, err := pickFree(pool, 24, tc.start, used)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: pickFree = %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := pickFree(pool, 24, 0, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}); err == nil {
		t.Error("pickFree with the whole pool used: no error; want one")
	}
	for _, bad := range []string{"127.20.0.0/16", "169.254.3.0/24", "224.1.0.0/16"} {
		if err := checkImplAddresses(netip.MustParsePrefix(bad)); err == nil || !strings.Contains(err.Error(), "network namespace of its own") {
			t.Errorf("checkImplAddresses(%s) = %v; want a refusal saying why", bad, err)
		}
	}
}

// The helper process of TestImplNetwork: with GATEWITNESS_IMPLNET_HELPER
// set to "pod ADDR", it answers "pod" on ADDR; set to "impl RELAY POD",
// it listens on the wildcard 0.0.0.0:80 and, for each connection, writes
// what the Pod at POD and the relay at RELAY answer.
func TestImplNetHelper(t *testing.T) {
	role := os.Getenv("GATEWITNESS_IMPLNET_HELPER")
	if role == "" {
		t.Skip("a helper process of TestImplNetwork")
	}
	f := strings.Fields(role)
	listen := f[1]
	if f[0] == "impl" {
		listen = "0.0.0.0:80"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		if f[0] == "pod" {
			fmt.Fprintln(c, "pod")
			c.Close()
			continue
		}
		var answers []string
		for _, addr := range []string{f[2], f[1]} {
			b, err := dialRead(addr)
			if err != nil {
				b = "error " + err.Error()
			}
			answers = append(answers, b)
		}
		fmt.Fprintln(c, "impl on "+c.LocalAddr().String()+": "+strings.Join(answers, ", "))
		c.Close()
	}
}

func dialRead(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}

// startHelper starts this test binary as TestImplNetHelper under cmd's
// ip netns exec, and waits for it to say it listens.
func startHelper(t *testing.T, cmd *exec.Cmd, role string) {
	t.Helper()
	cmd.Args = append(cmd.Args, "-test.run=^TestImplNetHelper$")
	cmd.Env = append(os.Environ(), "GATEWITNESS_IMPLNET_HELPER="+role)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper %s: %q, %v", role, line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
}

// An implementation in its own namespace binds the wildcard :80, the host
// reaches it at any address of the Gateway range, and it reaches a Pod IP
// and, through the relay, the API server's address on the host's
// loopback.
func TestImplNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and routes")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	hosts, err := hostAddresses()
	if err != nil {
		t.Fatal(err)
	}
	var used []netip.Prefix
	for _, h := range hosts {
		used = append(used, h.prefix.Masked())
	}
	podCIDR, err := pickFree(netip.MustParsePrefix("10.247.0.0/16"), 24, os.Getpid(), append(used, hostRoutes()...))
	if err != nil {
		t.Fatal(err)
	}
	pods, err := createPodNetwork(podCIDR)
	if err != nil {
		t.Fatal(err)
	}
	defer pods.close()
	podIP := podCIDR.Addr().Next()
	if err := pods.addIP(podIP); err != nil {
		t.Fatal(err)
	}
	startHelper(t, pods.command(os.Args[0]), "pod "+netip.AddrPortFrom(podIP, 3000).String())

	// The API server stands in: something on the host's loopback.
	api, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	go func() {
		for {
			c, err := api.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "api")
			c.Close()
		}
	}()
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["localcp"] = &clientcmdapi.Cluster{Server: "https://" + api.Addr().String()}
	if err := clientcmd.WriteToFile(*kc, dir+"/kubeconfig"); err != nil {
		t.Fatal(err)
	}
	n, err := createImplNetwork(netip.Prefix{}, pods, api.Addr().String(), dir+"/kubeconfig", dir)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.close()
		}
	}()
	if !implAddressPool.Contains(n.addresses.Addr()) || n.addresses.Bits() != 24 || n.addresses.Overlaps(podCIDR) {
		t.Errorf("picked Gateway addresses %s; want a /24 of %s clear of the Pod CIDR %s", n.addresses, implAddressPool, podCIDR)
	}
	written, err := clientcmd.LoadFromFile(n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	relay := strings.TrimPrefix(written.Clusters["localcp"].Server, "https://")
	if relay != n.relay.Addr().String() || written.Clusters["localcp"].TLSServerName != "localhost" {
		t.Errorf("the implementation's kubeconfig names %+v; want the relay %s with TLS server name localhost", written.Clusters["localcp"], n.relay.Addr())
	}
	startHelper(t, exec.Command("ip", "netns", "exec", n.netns, os.Args[0]), "impl "+relay+" "+netip.AddrPortFrom(podIP, 3000).String())

	// Two addresses of the range, from the host: the wildcard listener
	// answers on both, and reached the Pod and the API server.
	for _, a := range []netip.Addr{n.addresses.Addr().Next(), n.addresses.Addr().Next().Next().Next()} {
		got, err := dialRead(netip.AddrPortFrom(a, 80).String())
		want := fmt.Sprintf("impl on %s:80: pod, api", a)
		if err != nil || got != want {
			t.Errorf("from the host to %s:80: %q, %v; want %q", a, got, err, want)
		}
	}
	if err := n.close(); err != nil {
		t.Errorf("close: %v", err)
	}
	closed = true
	if linkExists(n.hostIf) || exec.Command("ip", "netns", "pids", n.netns).Run() == nil {
		t.Errorf("close left %s or %s", n.hostIf, n.netns)
	}
	if out, _ := exec.Command("ip", "route", "show", n.addresses.String()).Output(); len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("close left the route %s", out)
	}
}
