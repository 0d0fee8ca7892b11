package standalone_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/gateway/standalone"
)

const ns = "default"

// newStore returns an in-memory object store, the stand-in for an API
// server (it has the default namespace, as a cluster does).
func newStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start starts a gateway on opts and closes it when the test ends.
func start(t *testing.T, opts standalone.Options) *standalone.Gateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := standalone.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g
}

// freePort returns a port nothing listens on at ip at the time of the call.
func freePort(t *testing.T, ip string) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return int32(port)
}

// wait is gomega for t, its Eventually bounded by 20s and polling every
// 10ms.
func wait(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	g.SetDefaultEventuallyPollingInterval(10 * time.Millisecond)
	return g
}

func condition(conds []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// backend creates a Service "echo" with one port, 8080, whose
// EndpointSlice points at a local HTTP server that answers with name.
func backend(t *testing.T, c client.Client, name string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend %s saw host %s", name, r.Host)
	}))
	t.Cleanup(srv.Close)
	host, portStr, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	ready := true
	p32 := int32(port)
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: &p32}},
	}
	if err := c.Create(ctx, es); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// gatewayWithRoute creates a Gateway of class with one HTTP listener on
// port and an HTTPRoute from it, for hostnames (none: every host), to the
// Service "echo".
func gatewayWithRoute(t *testing.T, c client.Client, class, name string, port int32, hostnames ...gwv1.Hostname) {
	t.Helper()
	ctx := context.Background()
	gw := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: gwv1.ObjectName(class),
			Listeners:        []gwv1.Listener{{Name: "http", Port: gwv1.PortNumber(port), Protocol: gwv1.HTTPProtocolType}},
		},
	}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	route := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(name)}}},
			Hostnames:       hostnames,
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "echo", Port: ptr(gwv1.PortNumber(8080))},
			}}}}},
		},
	}
	if err := c.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
}

// programmedAddress waits for the Gateway to be Programmed and returns
// its one published address.
func programmedAddress(t *testing.T, c client.Client, name string) string {
	t.Helper()
	var addr string
	wait(t).Eventually(func() error {
		gw := &gwv1.Gateway{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gw); err != nil {
			return err
		}
		cond, ok := condition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if !ok || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("Programmed is %+v", cond)
		}
		if len(gw.Status.Addresses) != 1 {
			return fmt.Errorf("addresses %+v; want one", gw.Status.Addresses)
		}
		addr = gw.Status.Addresses[0].Value
		return nil
	}).Should(gomega.Succeed(), "Gateway "+name+" programmed with an address")
	return addr
}

// getBody sends GET / with the Host header host to addr and returns the
// body of a 200 answer; any other outcome is an error.
func getBody(addr, host string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d, body %q", resp.StatusCode, body)
	}
	return string(body), nil
}

// TestStartServesAtPublishedAddress runs the gateway against the
// in-memory store as it would against an API server: it creates the
// GatewayClass it was asked for and accepts it with the supported
// features, gives each Gateway its own address of the prefix, and serves
// each at that address and the listener's own port, so a client needs
// nothing but the Gateway's status and spec.
func TestStartServesAtPublishedAddress(t *testing.T) {
	s := newStore(t)
	const prefix = "127.73.1.0/24"
	g := start(t, standalone.Options{
		Client:            s,
		GatewayClassName:  "standalone-test",
		Addresses:         netip.MustParsePrefix(prefix),
		SupportedFeatures: []gwv1.FeatureName{"Gateway", "HTTPRoute"},
	})

	gc := &gwv1.GatewayClass{}
	if err := s.Get(context.Background(), client.ObjectKey{Name: "standalone-test"}, gc); err != nil {
		t.Fatalf("the GatewayClass was not created: %v", err)
	}
	if gc.Spec.ControllerName != standalone.DefaultControllerName {
		t.Errorf("GatewayClass controllerName %q; want %q", gc.Spec.ControllerName, standalone.DefaultControllerName)
	}
	if cond, ok := condition(gc.Status.Conditions, "Accepted"); !ok || cond.Status != metav1.ConditionTrue {
		t.Errorf("GatewayClass Accepted is %+v after Start; want True", cond)
	}
	if len(gc.Status.SupportedFeatures) != 2 {
		t.Errorf("GatewayClass supportedFeatures %+v; want Gateway and HTTPRoute", gc.Status.SupportedFeatures)
	}

	backend(t, s, "b1")
	// Two Gateways on one port: each has its own address, so both serve it.
	port := freePort(t, "127.73.1.1")
	gatewayWithRoute(t, s, "standalone-test", "gw-a", port)
	gatewayWithRoute(t, s, "standalone-test", "gw-b", port)
	a, b := programmedAddress(t, s, "gw-a"), programmedAddress(t, s, "gw-b")
	if a == b {
		t.Fatalf("both Gateways have the address %s; want one each", a)
	}
	for name, ip := range map[string]string{"gw-a": a, "gw-b": b} {
		if !netip.MustParsePrefix(prefix).Contains(netip.MustParseAddr(ip)) {
			t.Errorf("Gateway %s has the address %s; want one of %s", name, ip, prefix)
		}
		want := net.JoinHostPort(ip, strconv.Itoa(int(port)))
		if got, ok := g.Addr(ns, name, port); !ok || got != want {
			t.Errorf("Addr(%s, %s, %d) = %q, %v; want %s", ns, name, port, got, ok, want)
		}
		var body string
		wait(t).Eventually(func() error {
			var err error
			body, err = getBody(want, "example.com")
			return err
		}).Should(gomega.Succeed(), "a 200 through Gateway "+name)
		if body != "backend b1 saw host example.com" {
			t.Errorf("through Gateway %s: body %q; want the backend's answer", name, body)
		}
	}
}

// TestStartSharedAddress checks a single-address prefix: every Gateway
// publishes it, and a second Gateway on a port the first one holds is
// not Programmed, with the socket error in the message.
func TestStartSharedAddress(t *testing.T) {
	s := newStore(t)
	start(t, standalone.Options{
		Client:           s,
		GatewayClassName: "standalone-shared",
		Addresses:        netip.MustParsePrefix("127.73.2.7/32"),
	})
	backend(t, s, "b2")
	port := freePort(t, "127.73.2.7")
	gatewayWithRoute(t, s, "standalone-shared", "first", port)
	if got := programmedAddress(t, s, "first"); got != "127.73.2.7" {
		t.Fatalf("address %s; want the single address 127.73.2.7", got)
	}
	// Programmed says the listener is up, not that its route is served
	// yet: wait for the route, so that the check after the second
	// Gateway's refusal shows that the refusal left it alone.
	wait(t).Eventually(func() error {
		_, err := getBody(net.JoinHostPort("127.73.2.7", strconv.Itoa(int(port))), "example.com")
		return err
	}).Should(gomega.Succeed(), "Gateway first serves its route")
	gatewayWithRoute(t, s, "standalone-shared", "second", port)
	wait(t).Eventually(func() error {
		gw := &gwv1.Gateway{}
		if err := s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "second"}, gw); err != nil {
			return err
		}
		cond, ok := condition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if !ok || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("Programmed is %+v; want False", cond)
		}
		if want := "127.73.2.7:" + strconv.Itoa(int(port)); !strings.Contains(cond.Message, want) {
			return fmt.Errorf("Programmed message %q does not name %s", cond.Message, want)
		}
		return nil
	}).Should(gomega.Succeed(), "Gateway second not programmed, naming the socket")
	if _, err := getBody(net.JoinHostPort("127.73.2.7", strconv.Itoa(int(port))), "example.com"); err != nil {
		t.Errorf("Gateway first no longer serves its port: %v", err)
	}
}

// TestStartClassOfAnotherController checks that Start refuses a class
// name that another controller owns, naming both controllers, and
// leaves the class alone.
func TestStartClassOfAnotherController(t *testing.T) {
	s := newStore(t)
	other := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Spec:       gwv1.GatewayClassSpec{ControllerName: "example.com/other"},
	}
	ctx := context.Background()
	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	g, err := standalone.Start(ctx, standalone.Options{Client: s, GatewayClassName: "taken"})
	if err == nil {
		g.Close()
		t.Fatal("Start succeeded; want an error for a class of another controller")
	}
	for _, part := range []string{`"taken"`, `"example.com/other"`, string(standalone.DefaultControllerName)} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not contain %s", err, part)
		}
	}
	got := &gwv1.GatewayClass{}
	if err := s.Get(ctx, client.ObjectKey{Name: "taken"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.ControllerName != "example.com/other" || len(got.Status.Conditions) != 0 {
		t.Errorf("the other controller's class changed: %+v", got)
	}
}

// TestStartBadOptions checks the errors for options Start cannot use.
func TestStartBadOptions(t *testing.T) {
	s := newStore(t)
	for _, tc := range []struct {
		name string
		opts standalone.Options
		want string
	}{
		{"no client", standalone.Options{}, "Options.Client is nil"},
		{"two addresses", standalone.Options{Client: s, Addresses: netip.MustParsePrefix("127.73.3.0/31")},
			"127.73.3.0/31 has no address for a Gateway"},
		{"shared address of a prefix", standalone.Options{Client: s, SharedAddress: true, Addresses: netip.MustParsePrefix("127.73.4.0/24")},
			"Options.SharedAddress with Options.Addresses 127.73.4.0/24; want the one address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := standalone.Start(context.Background(), tc.opts)
			if err == nil {
				g.Close()
				t.Fatalf("Start succeeded; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestStartSharedAddressMergesListeners checks Options.SharedAddress:
// every Gateway publishes the one address, the port's socket is bound to
// the wildcard, and it serves the routes of both Gateways' listeners on
// that port (each route's hostname), as implementations with one entry
// point per port do; a hostname neither route has gets 404.
func TestStartSharedAddressMergesListeners(t *testing.T) {
	s := newStore(t)
	g := start(t, standalone.Options{
		Client:           s,
		GatewayClassName: "standalone-merged",
		Addresses:        netip.MustParsePrefix("127.73.3.7/32"),
		SharedAddress:    true,
	})
	backend(t, s, "b3")
	port := freePort(t, "0.0.0.0")
	for _, name := range []string{"gw-a", "gw-b"} {
		// The hostname at creation: an update after it could meet the
		// controller's status write (a conflict).
		gatewayWithRoute(t, s, "standalone-merged", name, port, gwv1.Hostname(name+".example"))
		if got := programmedAddress(t, s, name); got != "127.73.3.7" {
			t.Errorf("Gateway %s has the address %s; want the shared 127.73.3.7", name, got)
		}
	}
	sock, ok := g.Addr(ns, "gw-b", port)
	if ap, err := netip.ParseAddrPort(sock); !ok || err != nil || !ap.Addr().IsUnspecified() || ap.Port() != uint16(port) {
		t.Fatalf("Addr(gw-b, %d) = %q, %v; want the wildcard socket of the port", port, sock, ok)
	}
	if a, _ := g.Addr(ns, "gw-a", port); a != sock {
		t.Errorf("Addr(gw-a) = %q, Addr(gw-b) = %q; want one socket", a, sock)
	}
	shared := net.JoinHostPort("127.73.3.7", strconv.Itoa(int(port)))
	// Until both routes are served with their hostnames, one of the
	// hosts misses or a route without hostnames answers every host: poll
	// until both hosts reach their routes and a hostname of neither gets
	// a 404 in the same round.
	wait(t).Eventually(func() error {
		for _, host := range []string{"gw-a.example", "gw-b.example"} {
			body, err := getBody(shared, host)
			if want := "backend b3 saw host " + host; err != nil || body != want {
				return fmt.Errorf("%s through the shared socket: %q, %v; want %q", host, body, err, want)
			}
		}
		_, err := getBody(shared, "neither.example")
		if err == nil || !strings.Contains(err.Error(), "status 404") {
			return fmt.Errorf("a hostname of no route: %v; want a 404", err)
		}
		return nil
	}).Should(gomega.Succeed(), "both Gateways' routes served through the one socket, each for its own hostname")
}
