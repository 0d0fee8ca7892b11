package tests

// What the connection timeout tests share: the expected timeouts (a suite
// option), the Gateway they run against, and raw connections to it.
// docs/semantics/connection-timeouts.md says what each test asserts.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/conntimeouts"
)

// ConnectionTimeouts are the connection-level timeouts the connection
// timeout tests expect of the Gateway they create, and the GatewayClass
// that Gateway gets. An implementation configured another way than by
// gatewitness's ConfigMap states its own class and values.
type ConnectionTimeouts struct {
	// GatewayClassName is the class of the tests' Gateways; empty means
	// each test's own class, which its copy of the manifest creates with a
	// parametersRef to its ConfigMap (see connFixture).
	GatewayClassName string
	// The six timeouts, as the ConfigMap keys name them; zero means the
	// implementation has none, and the test of that timeout fails.
	Client, ClientFin, Server, ServerFin, Tunnel, TLSInspectDelay time.Duration
}

// DefaultConnectionTimeouts returns the values of the ConfigMap in
// gatewitness/connection-timeouts.yaml. Where a gateway could apply one
// timeout where another belongs, the two are far enough apart that it
// fails the window at every accepted tolerance: the wrong one is either
// shorter (the window's lower bound fails it) or longer by more than
// MaxTimingTolerance (the client timeout, which a gateway without an
// inspect delay waits instead, is 3s past the inspect delay; the tunnel
// timeout, which lingering half-closed tunnels reach, is 3.5s past the
// server-fin timeout).
func DefaultConnectionTimeouts() ConnectionTimeouts {
	return ConnectionTimeouts{
		Client:          4 * time.Second,
		ClientFin:       time.Second,
		Server:          2 * time.Second,
		ServerFin:       2500 * time.Millisecond,
		Tunnel:          6 * time.Second,
		TLSInspectDelay: time.Second,
	}
}

var connectionTimeouts atomic.Pointer[ConnectionTimeouts]

func init() {
	d := DefaultConnectionTimeouts()
	connectionTimeouts.Store(&d)
}

// ExpectedConnectionTimeouts returns the timeouts the tests expect: the
// runner's --connection-timeouts option, by default
// DefaultConnectionTimeouts.
func ExpectedConnectionTimeouts() ConnectionTimeouts { return *connectionTimeouts.Load() }

// SetConnectionTimeouts sets what ExpectedConnectionTimeouts returns. The
// runner calls it before a run. Negative values and a malformed class
// name are errors naming the key.
func SetConnectionTimeouts(c ConnectionTimeouts) error {
	for _, f := range c.fields() {
		if *f.d < 0 {
			return fmt.Errorf("tests: connection timeout %s is %v; want 0 or more", f.key, *f.d)
		}
	}
	if c.GatewayClassName != "" {
		if msgs := validation.IsDNS1123Subdomain(c.GatewayClassName); len(msgs) > 0 {
			return fmt.Errorf("tests: connection timeouts gatewayClassName %q is not a Kubernetes object name (lower-case DNS subdomain): %s", c.GatewayClassName, strings.Join(msgs, "; "))
		}
	}
	connectionTimeouts.Store(&c)
	return nil
}

// ParseConnectionTimeouts reads keys and values over base: the six
// ConfigMap keys (clientTimeout, clientFinTimeout, serverTimeout,
// serverFinTimeout, tunnelTimeout, tlsInspectDelay), whose values take the
// ConfigMap's forms, and gatewayClassName. An unknown key or a bad value
// is an error naming it and the accepted form.
func ParseConnectionTimeouts(base ConnectionTimeouts, kv map[string]string) (ConnectionTimeouts, error) {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fields := base.fields()
	accepted := []string{"gatewayClassName"}
	for _, f := range fields {
		accepted = append(accepted, f.key)
	}
	for _, k := range keys {
		v := strings.TrimSpace(kv[k])
		if k == "gatewayClassName" {
			base.GatewayClassName = v
			continue
		}
		i := slices.IndexFunc(fields, func(f timeoutField) bool { return f.key == k })
		if i < 0 {
			return base, fmt.Errorf("connection timeouts: key %q is not known; accepted keys: %s", k, strings.Join(accepted, ", "))
		}
		d, _, err := conntimeouts.ParseTimeout(v)
		if err != nil {
			return base, fmt.Errorf("connection timeouts: %s: %w", k, err)
		}
		*fields[i].d = d
	}
	return base, nil
}

// timeoutField is one timeout of ConnectionTimeouts and its key.
type timeoutField struct {
	key string
	d   *time.Duration
}

func (c *ConnectionTimeouts) fields() []timeoutField {
	return []timeoutField{
		{conntimeouts.KeyClientTimeout, &c.Client},
		{conntimeouts.KeyClientFinTimeout, &c.ClientFin},
		{conntimeouts.KeyServerTimeout, &c.Server},
		{conntimeouts.KeyServerFinTimeout, &c.ServerFin},
		{conntimeouts.KeyTunnelTimeout, &c.Tunnel},
		{conntimeouts.KeyTLSInspectDelay, &c.TLSInspectDelay},
	}
}

// expectTimeout returns the expected value of one timeout, failing t when
// it is zero: a claimed feature needs its timeout configured.
func expectTimeout(t *testing.T, key string, d time.Duration) time.Duration {
	t.Helper()
	if d <= 0 {
		t.Fatalf("the expected %s is 0 (disabled); state the configured value with --connection-timeouts %s=<value>", key, key)
	}
	return d
}

// connManifest is the connection timeouts manifest. Each test applies its
// own copy of it, with every object renamed (see connFixture).
const connManifest = ManifestPrefix + "connection-timeouts.yaml"

// connHostFor is the hostname of the route of the test's copy named name:
// each test has its own, so that on an implementation that merges the
// Gateways' listeners onto one address and port every request still
// reaches its own test's backend.
func connHostFor(name string) string { return name + ".gatewitness.test" }

// connTarget is a test's Gateway and a client of its HTTP listener.
type connTarget struct {
	name string // the Gateway's name (and its route's, and its backend's)
	host string // the route's hostname (connHostFor)
	addr string // the HTTP listener, host:port
	c    *testclient.Route
	dial DialFunc
}

// newConnGateway applies the test's copy of the connection timeouts
// manifest (connFixture: its ConfigMap, GatewayClass, route and backend,
// all named name), creates the Gateway name of the stated class (the
// suite's applier would give a Gateway from a manifest the suite's own
// class) once the backend is ready (createOwnGateway), deletes them when
// t ends, and waits until the Gateway and the route are accepted and the
// backend answers through it. extra listeners are added to the HTTP one.
// Each test has its own name, so the tests run in parallel.
func newConnGateway(t *testing.T, s *suite.ConformanceTestSuite, name string, extra ...gwv1.Listener) *connTarget {
	t.Helper()
	start := time.Now()
	connFixture(t, s, name)
	class := ExpectedConnectionTimeouts().GatewayClassName
	if class == "" {
		class = name
	}
	// Created only once the route and its backend are in place
	// (own_gateway.go).
	gw := httpGateway(name, class, extra...)
	createOwnGateway(t, s, gw, name)
	nn := types.NamespacedName{Namespace: infraNamespace, Name: name}
	seen := statusSeen{start: start, programmed: gatewayProgrammed(t, s, nn)}
	addr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName,
		kubernetes.NewGatewayRef(nn, "http"), nn)
	seen.accepted = time.Now()
	requireOwnSocket(t, s, gw, addr,
		"its GatewayClass's connection timeouts (parametersRef) must govern the listener's socket, which one socket shared with a Gateway of another class cannot show")
	host := connHostFor(name)
	// The Gateway is the test's own: its deletion, the first of the
	// clean-up's, takes the route away, so retire deletes nothing itself.
	chk := httpCheck(t, newRouteClient(t, s, addr, host), "/ready", name)
	served(t, s, chk, routeNames("HTTPRoute", []string{name}), seen)
	retire(t, s, chk, "Gateway "+nn.String(), nil)
	return &connTarget{name: name, host: host, addr: addr, c: newRouteClient(t, s, addr, host), dial: DialContext(s)}
}

// connFixture applies a copy of gatewitness/connection-timeouts.yaml with
// every object named name: the ConfigMap of timeouts, the GatewayClass
// whose parametersRef names it (and whose controller is the suite's), the
// HTTPRoute (its parentRef the Gateway name, its backendRef the Service
// name) and the Service and Deployment of its backend (labelled app:
// name). It deletes them when t ends, as the suite deletes a test's
// manifests.
func connFixture(t *testing.T, s *suite.ConformanceTestSuite, name string) {
	t.Helper()
	raw, err := readManifest(s.ManifestFS, connManifest)
	if err != nil {
		t.Fatalf("reading %s: %v", connManifest, err)
	}
	objs, err := renamedConnObjects(raw, name, s.ControllerName)
	if err != nil {
		t.Fatalf("%s: %v", connManifest, err)
	}
	s.Applier.MustApplyObjectsWithCleanup(t, s.Client, s.TimeoutConfig, objs, s.Cleanup)
}

// renamedConnObjects decodes the connection timeouts manifest and renames
// its objects as connFixture says.
func renamedConnObjects(raw []byte, name, controller string) ([]client.Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []client.Object
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding: %w", err)
		}
		if len(doc) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		u.SetName(name)
		var err error
		switch u.GetKind() {
		case "ConfigMap", "Service":
			if u.GetKind() == "Service" {
				err = unstructured.SetNestedField(u.Object, name, "spec", "selector", "app")
			}
		case "GatewayClass":
			err = errors.Join(
				unstructured.SetNestedField(u.Object, name, "spec", "parametersRef", "name"),
				unstructured.SetNestedField(u.Object, controller, "spec", "controllerName"))
		case "HTTPRoute":
			var route gwv1.HTTPRoute
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &route); err == nil {
				for i := range route.Spec.ParentRefs {
					route.Spec.ParentRefs[i].Name = gwv1.ObjectName(name)
				}
				route.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(connHostFor(name))}
				for i := range route.Spec.Rules {
					for j := range route.Spec.Rules[i].BackendRefs {
						route.Spec.Rules[i].BackendRefs[j].Name = gwv1.ObjectName(name)
					}
				}
				u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&route)
			}
		case "Deployment":
			u.SetLabels(map[string]string{"app": name})
			err = errors.Join(
				unstructured.SetNestedStringMap(u.Object, map[string]string{"app": name}, "spec", "selector", "matchLabels"),
				unstructured.SetNestedStringMap(u.Object, map[string]string{"app": name}, "spec", "template", "metadata", "labels"))
		default:
			return nil, fmt.Errorf("a %s, which connFixture does not know how to rename", u.GetKind())
		}
		if err != nil {
			return nil, fmt.Errorf("renaming the %s: %w", u.GetKind(), err)
		}
		out = append(out, u)
	}
}

// rawConn opens a TCP connection to addr, closed when t ends.
func (g *connTarget) rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := g.dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("connecting to the Gateway at %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedAfter reads conn until the Gateway ends it (EOF or a reset) and
// returns how long after start that was and up to 64 KiB of what was read.
// It gives up after giveUp: gaveUp is then true.
func closedAfter(conn net.Conn, start time.Time, giveUp time.Duration) (elapsed time.Duration, got []byte, gaveUp bool) {
	_ = conn.SetReadDeadline(start.Add(giveUp))
	got, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	elapsed = time.Since(start)
	var ne net.Error
	return elapsed, got, errors.As(err, &ne) && ne.Timeout()
}

// connGiveUp is how long a test waits for a close expected after d.
func connGiveUp(d time.Duration) time.Duration { return d + 2*TimingTolerance() + 5*time.Second }

// openWebSocket opens a WebSocket to pathQuery on the tests' route and
// returns it, the TCP connection under it, and the time the handshake
// started: the gateway's tunnel starts after that.
func (g *connTarget) openWebSocket(t *testing.T, pathQuery string) (*websocket.Conn, net.Conn, time.Time) {
	t.Helper()
	cfg, err := websocket.NewConfig("ws://"+g.host+pathQuery, "http://"+g.host)
	if err != nil {
		t.Fatalf("WebSocket config for %s: %v", pathQuery, err)
	}
	start := time.Now()
	conn := g.rawConn(t, g.addr)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		t.Fatalf("WebSocket handshake for %s through the Gateway: %v", pathQuery, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ws, conn, start
}
