// Package control holds the run-time switches of one echo-backend process:
// the HTTP health status, the gRPC health statuses, the TCP listener and
// the refusal of the HTTP listeners' next connections. The
// HTTP admin endpoint and the gRPC Admin service both act on one Controls.
package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Switch is something that can be opened and closed at run time, such as
// the TCP echo listener.
type Switch interface {
	SetOpen(open bool) error
	IsOpen() bool
}

// Controls are safe for concurrent use.
type Controls struct {
	httpHealth atomic.Int32

	// GRPCHealth serves grpc.health.v1 on every gRPC port. Set statuses
	// through SetGRPCHealth, so that GRPCServices lists them.
	GRPCHealth *health.Server

	// refusePending is how many accepted connections Refusing still
	// resets; refused how many it has.
	refusePending atomic.Int64
	refused       atomic.Uint64

	mu       sync.Mutex
	tcp      Switch
	services map[string]bool // names SetGRPCHealth set, "" included
}

// Bounds on the gRPC services whose health can be set, so that admin
// requests cannot grow the process without limit.
const (
	MaxGRPCServices       = 1024 // distinct names, "" included
	MaxGRPCServiceNameLen = 1024 // bytes in one name
)

// New returns controls with HTTP health 200 and every gRPC service SERVING.
func New() *Controls {
	c := &Controls{GRPCHealth: health.NewServer(), services: map[string]bool{"": true}}
	c.httpHealth.Store(http.StatusOK)
	return c
}

// HTTPHealth is the status /health answers with.
func (c *Controls) HTTPHealth() int { return int(c.httpHealth.Load()) }

// SetHTTPHealth sets the status /health answers with (200-599; an informational 1xx status is no final answer).
func (c *Controls) SetHTTPHealth(code int) error {
	if code < 200 || code > 599 {
		return fmt.Errorf("http health status %d: accepted: an HTTP status code from 200 to 599", code)
	}
	c.httpHealth.Store(int32(code))
	return nil
}

// SetGRPCHealth sets the serving status of one gRPC service ("" is the
// server as a whole) and remembers its name for GRPCServices. At most
// MaxGRPCServices names of at most MaxGRPCServiceNameLen bytes are
// accepted.
func (c *Controls) SetGRPCHealth(service string, status healthpb.HealthCheckResponse_ServingStatus) error {
	if _, ok := healthpb.HealthCheckResponse_ServingStatus_name[int32(status)]; !ok {
		return fmt.Errorf("grpc health status %d: accepted: SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN", status)
	}
	if len(service) > MaxGRPCServiceNameLen {
		return fmt.Errorf("grpc health service name of %d bytes: accepted: at most %d bytes", len(service), MaxGRPCServiceNameLen)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.services[service] && len(c.services) >= MaxGRPCServices {
		return fmt.Errorf("grpc health service %q: %d services are set already: accepted: a service already set (at most %d)",
			service, len(c.services), MaxGRPCServices)
	}
	c.services[service] = true
	// Under c.mu, so that GRPCServices never lists a name before its status.
	c.GRPCHealth.SetServingStatus(service, status)
	return nil
}

// GRPCServices returns the serving status name (such as "SERVING") of the
// server as a whole ("") and of every service SetGRPCHealth set.
func (c *Controls) GRPCServices() map[string]string {
	c.mu.Lock()
	names := make([]string, 0, len(c.services))
	for name := range c.services {
		names = append(names, name)
	}
	c.mu.Unlock()
	out := make(map[string]string, len(names))
	for _, name := range names {
		out[name] = c.GRPCStatus(name)
	}
	return out
}

// GRPCStatus returns the serving status name of one service, such as
// "SERVING", or "SERVICE_UNKNOWN" for a name the health server does not
// know.
func (c *Controls) GRPCStatus(service string) string {
	resp, err := c.GRPCHealth.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN.String()
	}
	return resp.GetStatus().String()
}

// ErrNoTCP is returned when no TCP listener runs in this process.
var ErrNoTCP = errors.New("no TCP echo listener runs in this process")

// SetTCPSwitch registers the TCP echo listener.
func (c *Controls) SetTCPSwitch(s Switch) {
	c.mu.Lock()
	c.tcp = s
	c.mu.Unlock()
}

// SetTCPOpen opens or closes the TCP echo listener.
func (c *Controls) SetTCPOpen(open bool) error {
	c.mu.Lock()
	s := c.tcp
	c.mu.Unlock()
	if s == nil {
		return ErrNoTCP
	}
	return s.SetOpen(open)
}

// TCPOpen reports whether the TCP echo listener accepts connections.
func (c *Controls) TCPOpen() (open, present bool) {
	c.mu.Lock()
	s := c.tcp
	c.mu.Unlock()
	if s == nil {
		return false, false
	}
	return s.IsOpen(), true
}

// MaxRefusals bounds RefuseConnections, so that an admin request cannot
// make a backend refuse for ever.
const MaxRefusals = 1000

// RefuseConnections makes the listeners wrapped by Refusing refuse the next
// n connections they accept (0 stops refusing; at most MaxRefusals): each
// is reset (a TCP RST) as soon as it is accepted, before a byte of it is
// read, as a backend whose accept queue overflows resets a connection the
// kernel had completed (tcp_abort_on_overflow). A request on it reaches no
// handler and is not in the ledger; Refusals counts it.
func (c *Controls) RefuseConnections(n int) error {
	if n < 0 || n > MaxRefusals {
		return fmt.Errorf("refuse %d connections: accepted: a count from 0 to %d", n, MaxRefusals)
	}
	c.refusePending.Store(int64(n))
	return nil
}

// Refusals returns how many connections are still to be refused and how
// many have been since the process started.
func (c *Controls) Refusals() (pending int, refused uint64) {
	return int(c.refusePending.Load()), c.refused.Load()
}

// takeRefusal reports whether the connection just accepted is to be
// refused, and counts it.
func (c *Controls) takeRefusal() bool {
	for {
		n := c.refusePending.Load()
		if n <= 0 {
			return false
		}
		if c.refusePending.CompareAndSwap(n, n-1) {
			c.refused.Add(1)
			return true
		}
	}
}

// Refusing returns ln, refusing the connections RefuseConnections asks
// for: they are reset as they are accepted, and Accept goes on to the
// next.
func (c *Controls) Refusing(ln net.Listener) net.Listener { return refusingListener{ln, c} }

type refusingListener struct {
	net.Listener
	c *Controls
}

func (l refusingListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil || !l.c.takeRefusal() {
			return conn, err
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with a reset, not a FIN
		}
		_ = conn.Close()
	}
}
