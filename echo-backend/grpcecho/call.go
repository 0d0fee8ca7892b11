package grpcecho

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/internal/ctxsleep"
)

// headerStream is the part of a server stream that sends metadata; unary
// calls use the grpc package functions on their context instead.
type headerStream interface {
	SendHeader(metadata.MD) error
	SetTrailer(metadata.MD)
}

// unaryStream sends metadata through a unary call's context.
type unaryStream struct{ ctx context.Context }

func (u unaryStream) SendHeader(md metadata.MD) error { return grpc.SendHeader(u.ctx, md) }
func (u unaryStream) SetTrailer(md metadata.MD)       { _ = grpc.SetTrailer(u.ctx, md) }

// call is one echo RPC being served: what the server received, its ledger
// handle and the fault action of its attempt.
type call struct {
	s      *server
	ctx    context.Context
	hs     headerStream
	method string

	md        metadata.MD // as received, helper keys removed, grpc-timeout restored
	id        string
	timeout   string               // grpc-timeout as received
	remaining *durationpb.Duration // deadline left on arrival; nil without deadline
	connID    uint64
	stream    uint32
	tapped    bool // connID and stream are known
	conn      string
	tls       *credentials.TLSInfo

	handle *ledger.Handle
	action fault.Action

	received  int   // request messages read
	bodyBytes int64 // request payload bytes read

	echoMD map[string]*echopb.Values // built once, shared by the call's responses
}

// begin records the arrival of an echo call and picks its fault action. A
// bad fault spec ends the call as rejected with INVALID_ARGUMENT.
func (s *server) begin(ctx context.Context, hs headerStream) (*call, error) {
	arrived := time.Now()
	c := &call{s: s, ctx: ctx, hs: hs}
	c.method, _ = grpc.Method(ctx)
	if dl, ok := ctx.Deadline(); ok {
		c.remaining = durationpb.New(dl.Sub(arrived))
	}
	in, _ := metadata.FromIncomingContext(ctx)
	c.md = make(metadata.MD, len(in))
	for k, v := range in {
		switch k {
		case h2tap.StreamHeader:
			if len(v) > 0 {
				c.connID, c.stream, c.tapped = h2tap.ParseStreamHeader(v[0])
			}
		case h2tap.GRPCTimeoutHeader:
			if len(v) > 0 {
				c.timeout = v[0]
			}
		default:
			c.md[k] = slices.Clone(v)
		}
	}
	if c.timeout != "" {
		c.md["grpc-timeout"] = []string{c.timeout}
	}
	if v := c.md[echowire.IDMetadata]; len(v) > 0 {
		c.id = v[0]
	}
	peerAddr := "unknown"
	if p, ok := peer.FromContext(ctx); ok {
		if p.Addr != nil {
			peerAddr = p.Addr.String()
		}
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			c.tls = &ti
		}
	}
	c.conn = fmt.Sprintf("c%d %s", c.connID, peerAddr)

	headers := make(map[string][]string, len(c.md))
	for k, v := range c.md {
		headers[k] = slices.Clone(v)
	}
	c.handle = s.opts.Ledger.Begin(c.id, ledger.Attempt{
		Arrived:     arrived,
		Listener:    s.opts.Listener,
		Protocol:    "HTTP/2.0",
		Conn:        c.conn,
		Stream:      c.stream,
		ConnRequest: rpcNumber(ctx),
		Method:      c.method,
		Path:        c.method,
		Headers:     headers,
	})

	// Several values of the fault key are read as one spec, in order.
	spec, err := fault.Parse(strings.Join(c.md[echowire.FaultMetadata], ";"), s.opts.Limits)
	if err != nil {
		return nil, c.reject(err.Error())
	}
	c.action = spec.For(c.handle.Number())
	if c.action.Faulted() {
		c.handle.Update(func(a *ledger.Attempt) { a.Fault = c.action.String() })
	}
	hs.SetTrailer(metadata.Pairs(AttemptTrailer, strconv.Itoa(c.handle.Number())))
	return c, nil
}

// reject ends the call as rejected with INVALID_ARGUMENT and msg.
func (c *call) reject(msg string) error {
	c.handle.Update(func(a *ledger.Attempt) {
		a.Status = 200
		a.GRPCCode = fault.GRPCCodeName(codes.InvalidArgument)
	})
	c.handle.End(ledger.Rejected, time.Now())
	return status.Error(codes.InvalidArgument, msg)
}

// read counts one request message, in the ledger too (messages, and the
// payload bytes so far in bodyBytes, which the Admin service's ledger also
// shows), so that a test can see a client stream's messages arrive before
// the client half-closes.
func (c *call) read(req *echopb.EchoRequest) {
	c.received++
	c.bodyBytes += int64(len(req.GetPayload()))
	n, size, now := c.received, c.bodyBytes, time.Now()
	c.handle.Update(func(a *ledger.Attempt) {
		a.Messages, a.BodyBytes = n, size
		if n == 1 {
			a.FirstMessage = &now
		}
	})
}

// failure is the status the action ends the call with, or nil when the call
// answers normally.
func (c *call) failure() *status.Status {
	a := c.action
	if a.HasGRPCStatus {
		if a.GRPCStatus == codes.OK {
			return nil
		}
		return status.New(a.GRPCStatus, a.GRPCMessage)
	}
	if code := CodeForHTTPStatus(a.Status); a.Status != 0 && code != codes.OK {
		return status.Newf(code, "gatewitness fault: HTTP status %d", a.Status)
	}
	return nil
}

// start runs the part of the action that comes before the first response
// message: delay, close, goaway, a reset before or after the headers, the
// headers themselves and body-delay. streamed says a streamed message
// follows, after which a mid-body reset happens; otherwise a mid-body reset
// happens here, after body-delay. When done is true the call is over and
// err is what the handler returns.
func (c *call) start(fail *status.Status, streamed bool) (done bool, err error) {
	a := c.action
	if err := c.wait(a.Delay); err != nil {
		return true, err
	}
	switch {
	case a.Close:
		return true, c.closeConn()
	case a.GoAway:
		return true, c.goAway()
	case a.Reset == fault.ResetBeforeHeaders:
		return true, c.reset()
	}
	if len(a.Trailers) > 0 {
		md := metadata.MD{}
		for _, t := range a.Trailers {
			md.Append(t.Name, t.Value)
		}
		c.hs.SetTrailer(md)
	}
	// An error without anything to do after the headers goes out as a
	// trailers-only response, as a server that fails fast sends it.
	if fail != nil && a.BodyDelay == 0 && a.Reset == fault.ResetNone && !streamed {
		return false, nil
	}
	if err := c.hs.SendHeader(metadata.MD{}); err != nil {
		return true, c.broken(err)
	}
	// HeadersSent and body-delay count from when the headers are on the
	// wire, not from when grpc-go queued them.
	if err := c.written(0); err != nil {
		return true, err
	}
	c.handle.HeadersSent(time.Now())
	if a.Reset == fault.ResetAfterHeaders {
		return true, c.reset()
	}
	if err := c.wait(a.BodyDelay); err != nil {
		return true, err
	}
	if a.Reset == fault.ResetMidBody && !streamed {
		return true, c.reset()
	}
	return false, nil
}

// written waits until the tap has forwarded what grpc-go queued for the
// call's stream: the response headers and at least dataBytes bytes of
// messages (1 for the first message). A fault that acts on the stream must
// not overtake them, and HeadersSent counts from when they left.
func (c *call) written(dataBytes int64) error {
	if !c.tapped {
		// The tap's faults cannot act on this call either; they say so.
		return nil
	}
	conn, ok := h2tap.Lookup(c.connID)
	if !ok {
		return nil // the connection is gone; so are the faults that need it
	}
	err := conn.WaitWritten(c.ctx, c.stream, true, dataBytes)
	switch {
	case err == nil:
		return nil
	case c.ctx.Err() != nil:
		return c.cancelled()
	case errors.Is(err, h2tap.ErrStreamEnded):
		// The client reset the stream, and grpc-go has not cancelled
		// the call's context yet.
		return c.broken(status.Errorf(codes.Canceled, "gatewitness: stream %d: %v", c.stream, err))
	}
	return c.broken(status.Errorf(codes.Unavailable, "gatewitness: stream %d: %v", c.stream, err))
}

// wait waits for d or until the call's context is done; in that case it
// records the attempt as cancelled and returns the context's status.
func (c *call) wait(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if !ctxsleep.Sleep(c.ctx, d) {
		return c.cancelled()
	}
	return nil
}

// cancelled records that the peer went away and returns the status of the
// call's context.
func (c *call) cancelled() error {
	c.handle.Cancelled(time.Now())
	st := status.FromContextError(c.ctx.Err())
	c.handle.Update(func(a *ledger.Attempt) { a.GRPCCode = fault.GRPCCodeName(st.Code()) })
	return st.Err()
}

// broken handles a failed Send, Recv or SendHeader: the stream is gone, which
// is the peer going away unless the server's own context says otherwise.
func (c *call) broken(err error) error {
	if c.ctx.Err() != nil {
		return c.cancelled()
	}
	c.handle.Cancelled(time.Now())
	c.handle.Update(func(a *ledger.Attempt) { a.GRPCCode = fault.GRPCCodeName(status.Code(err)) })
	return err
}

// finish ends the call with fail, or with OK when fail is nil.
func (c *call) finish(fail *status.Status) error {
	code := codes.OK
	if fail != nil {
		code = fail.Code()
	}
	c.handle.Update(func(a *ledger.Attempt) {
		a.Status = 200
		a.GRPCCode = fault.GRPCCodeName(code)
		a.BodyBytes = c.bodyBytes
	})
	c.handle.End(ledger.Answered, time.Now())
	return fail.Err()
}

// tapConn returns the h2tap connection of the call.
func (c *call) tapConn() (*h2tap.Conn, error) {
	if !c.tapped {
		return nil, status.Errorf(codes.Internal, "gatewitness: the call has no valid %s header, so the fault cannot act on its stream", h2tap.StreamHeader)
	}
	conn, ok := h2tap.Lookup(c.connID)
	if !ok {
		return nil, status.Errorf(codes.Internal, "gatewitness: connection c%d is no longer open", c.connID)
	}
	return conn, nil
}

// faultFailed ends the call when a reset, goaway or close could not be
// carried out.
func (c *call) faultFailed(err error) error {
	st := status.Convert(err)
	c.handle.Update(func(a *ledger.Attempt) {
		a.Status = 200
		a.GRPCCode = fault.GRPCCodeName(st.Code())
	})
	c.handle.End(ledger.Answered, time.Now())
	return st.Err()
}

// reset sends RST_STREAM on the call's stream.
func (c *call) reset() error {
	conn, err := c.tapConn()
	if err != nil {
		return c.faultFailed(err)
	}
	code := c.action.ResetCode
	if err := conn.ResetStream(c.stream, code); err != nil {
		return c.faultFailed(status.Errorf(codes.Internal, "gatewitness: reset stream %d: %v", c.stream, err))
	}
	c.handle.End(ledger.Reset, time.Now())
	// The tap drops whatever the server writes on the stream from now on.
	return status.Errorf(codes.Aborted, "gatewitness fault: stream reset with %s", fault.ResetCodeName(code))
}

// goAway sends GOAWAY excluding the call's stream: the tap drops whatever
// the server writes for it (and for later streams), lets the earlier
// streams complete, then closes the connection.
func (c *call) goAway() error {
	conn, err := c.tapConn()
	if err != nil {
		return c.faultFailed(err)
	}
	last := uint32(0)
	if c.stream > 2 {
		last = c.stream - 2
	}
	code := c.action.ResetCode // fault's default for goaway is NO_ERROR
	if err := conn.GoAway(last, code); err != nil {
		return c.faultFailed(status.Errorf(codes.Internal, "gatewitness: goaway on c%d: %v", c.connID, err))
	}
	c.handle.End(ledger.GoAway, time.Now())
	return status.Errorf(codes.Unavailable, "gatewitness fault: GOAWAY(%d, %s)", last, fault.ResetCodeName(code))
}

// closeConn closes the call's connection without a response.
func (c *call) closeConn() error {
	conn, err := c.tapConn()
	if err != nil {
		return c.faultFailed(err)
	}
	c.handle.End(ledger.Closed, time.Now())
	if err := conn.Close(); err != nil {
		return status.Errorf(codes.Unavailable, "gatewitness fault: close c%d: %v", c.connID, err)
	}
	return status.Errorf(codes.Unavailable, "gatewitness fault: connection closed")
}

// authority is the :authority the call came with.
func (c *call) authority() string {
	if v := c.md[":authority"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// echo builds our echo of the request being answered.
func (c *call) echo(req *echopb.EchoRequest, index int) *echopb.EchoResponse {
	if c.echoMD == nil {
		c.echoMD = make(map[string]*echopb.Values, len(c.md))
		for k, v := range c.md {
			c.echoMD[k] = &echopb.Values{Values: v}
		}
	}
	p := c.s.opts.Pod
	return &echopb.EchoResponse{
		Metadata:          c.echoMD,
		Authority:         c.authority(),
		FullMethod:        c.method,
		GrpcTimeout:       c.timeout,
		DeadlineRemaining: c.remaining,
		RequestId:         c.id,
		Attempt:           int32(c.handle.Number()),
		Pod:               &echopb.Pod{Namespace: p.Namespace, Ingress: p.Ingress, Service: p.Service, Pod: p.Pod},
		Tls:               tlsInfo(c.tls),
		MessageIndex:      int32(index),
		Payload:           req.GetPayload(),
		MessagesReceived:  int32(c.received),
		Fault:             c.action.String(),
		Listener:          c.s.opts.Listener,
		Conn:              c.conn,
		Stream:            c.stream,
	}
}

// sortedKeys returns the keys of md in order.
func sortedKeys(md metadata.MD) []string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tlsVersions names the TLS versions as echo-basic does.
var tlsVersions = map[uint16]string{
	tls.VersionTLS10: "TLSv1.0",
	tls.VersionTLS11: "TLSv1.1",
	tls.VersionTLS12: "TLSv1.2",
	tls.VersionTLS13: "TLSv1.3",
}

// tlsInfo describes a TLS connection, or returns nil for plaintext.
func tlsInfo(ti *credentials.TLSInfo) *echopb.TLSInfo {
	if ti == nil {
		return nil
	}
	st := ti.State
	out := &echopb.TLSInfo{
		Version:            tlsVersions[st.Version],
		NegotiatedProtocol: st.NegotiatedProtocol,
		ServerName:         st.ServerName,
		CipherSuite:        tls.CipherSuiteName(st.CipherSuite),
	}
	for _, cert := range st.PeerCertificates {
		out.PeerCertificates = append(out.PeerCertificates,
			string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})))
	}
	return out
}
