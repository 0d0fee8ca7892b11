package grpcecho

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
)

// echoService serves gatewitness.echo.v1.Echo.
type echoService struct {
	echopb.UnimplementedEchoServer
	s *server
}

// Unary answers one echo.
func (e *echoService) Unary(ctx context.Context, req *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	return serveUnary(e.s, ctx, req, func(c *call) *echopb.EchoResponse { return c.echo(req, 0) })
}

// serveUnary runs a unary echo call: the fault action, then respond's
// answer.
func serveUnary[T any](s *server, ctx context.Context, req *echopb.EchoRequest, respond func(*call) *T) (*T, error) {
	c, err := s.begin(ctx, unaryStream{ctx})
	if err != nil {
		return nil, err
	}
	c.read(req)
	fail := c.failure()
	if done, err := c.start(fail, false); done {
		return nil, err
	}
	if fail != nil {
		return nil, c.finish(fail)
	}
	resp := respond(c)
	c.finish(nil)
	return resp, nil
}

// ServerStream answers one request with a stream of echoes.
func (e *echoService) ServerStream(req *echopb.EchoRequest, ss grpc.ServerStreamingServer[echopb.EchoResponse]) error {
	c, err := e.s.begin(ss.Context(), ss)
	if err != nil {
		return err
	}
	c.read(req)
	a := c.action
	n := 1
	if max := e.s.maxMessages(); req.GetMessages() < 0 || int(req.GetMessages()) > max {
		return c.reject(fmt.Sprintf("EchoRequest field messages is %d; accepted: 0 (one message) to %d",
			req.GetMessages(), max))
	}
	if req.GetMessages() > 0 {
		n = int(req.GetMessages())
	}
	fail := c.failure()
	switch {
	case a.Messages > 0:
		n = a.Messages
	case fail != nil:
		n = 0
	}
	if done, err := c.start(fail, n > 0); done {
		return err
	}
	for i := range n {
		if stop, err := c.sendEcho(ss.Send, req, i); stop {
			return err
		}
	}
	return c.finish(fail)
}

// ClientStream reads every request, then answers once.
func (e *echoService) ClientStream(ss grpc.ClientStreamingServer[echopb.EchoRequest, echopb.EchoResponse]) error {
	c, err := e.s.begin(ss.Context(), ss)
	if err != nil {
		return err
	}
	last := &echopb.EchoRequest{}
	for {
		req, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.broken(err)
		}
		c.read(req)
		last = req
	}
	fail := c.failure()
	if done, err := c.start(fail, false); done {
		return err
	}
	if fail != nil {
		return c.finish(fail)
	}
	if err := ss.SendAndClose(c.echo(last, 0)); err != nil {
		return c.broken(err)
	}
	return c.finish(nil)
}

// BidiStream answers each request as it arrives.
func (e *echoService) BidiStream(ss grpc.BidiStreamingServer[echopb.EchoRequest, echopb.EchoResponse]) error {
	c, err := e.s.begin(ss.Context(), ss)
	if err != nil {
		return err
	}
	fail := c.failure()
	if done, err := c.start(fail, fail == nil); done {
		return err
	}
	if fail != nil {
		return c.finish(fail)
	}
	for i := 0; ; i++ {
		req, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.broken(err)
		}
		c.read(req)
		if stop, err := c.sendEcho(ss.Send, req, i); stop {
			return err
		}
	}
	return c.finish(nil)
}

// sendEcho sends the echo of req as the i-th response of a stream: after
// the fault's interval unless it is the first, and followed by a reset of
// the stream when the fault resets mid-body. stop says the call ends, with
// err.
func (c *call) sendEcho(send func(*echopb.EchoResponse) error, req *echopb.EchoRequest, i int) (stop bool, err error) {
	if i > 0 {
		if err := c.wait(c.action.Interval); err != nil {
			return true, err
		}
	}
	if err := send(c.echo(req, i)); err != nil {
		return true, c.broken(err)
	}
	if i == 0 && c.action.Reset == fault.ResetMidBody {
		if err := c.written(1); err != nil {
			return true, err
		}
		return true, c.reset()
	}
	return false, nil
}

// maxMessages is the bound on EchoRequest.messages: the fault limit.
func (s *server) maxMessages() int {
	if s.opts.Limits.MaxMessages > 0 {
		return s.opts.Limits.MaxMessages
	}
	return fault.DefaultLimits.MaxMessages
}
