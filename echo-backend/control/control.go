// Package control holds the run-time switches of one echo-backend process:
// the HTTP health status, the gRPC health statuses and the TCP listener. The
// HTTP admin endpoint and the gRPC Admin service both act on one Controls.
package control

import (
	"errors"
	"fmt"
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

	// GRPCHealth serves grpc.health.v1 on every gRPC port.
	GRPCHealth *health.Server

	mu  sync.Mutex
	tcp Switch
}

// New returns controls with HTTP health 200 and every gRPC service SERVING.
func New() *Controls {
	c := &Controls{GRPCHealth: health.NewServer()}
	c.httpHealth.Store(http.StatusOK)
	return c
}

// HTTPHealth is the status /health answers with.
func (c *Controls) HTTPHealth() int { return int(c.httpHealth.Load()) }

// SetHTTPHealth sets the status /health answers with (100-599).
func (c *Controls) SetHTTPHealth(code int) error {
	if code < 100 || code > 599 {
		return fmt.Errorf("http health status %d: accepted: an HTTP status code from 100 to 599", code)
	}
	c.httpHealth.Store(int32(code))
	return nil
}

// SetGRPCHealth sets the serving status of one gRPC service ("" is the
// server as a whole).
func (c *Controls) SetGRPCHealth(service string, status healthpb.HealthCheckResponse_ServingStatus) error {
	if _, ok := healthpb.HealthCheckResponse_ServingStatus_name[int32(status)]; !ok {
		return fmt.Errorf("grpc health status %d: accepted: SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN", status)
	}
	c.GRPCHealth.SetServingStatus(service, status)
	return nil
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
