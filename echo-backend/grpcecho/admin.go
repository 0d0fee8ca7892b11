package grpcecho

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// adminService serves gatewitness.echo.v1.Admin on the process's Controls and
// Ledger.
type adminService struct {
	echopb.UnimplementedAdminServer
	s *server
}

// SetHTTPHealth sets the status of the HTTP /health endpoint.
func (ad *adminService) SetHTTPHealth(_ context.Context, req *echopb.SetHTTPHealthRequest) (*echopb.SetHTTPHealthResponse, error) {
	ctl := ad.s.opts.Controls
	if err := ctl.SetHTTPHealth(int(req.GetStatus())); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "SetHTTPHealthRequest field status: %v", err)
	}
	return &echopb.SetHTTPHealthResponse{Status: int32(ctl.HTTPHealth())}, nil
}

// SetGRPCHealth sets the grpc.health.v1 status of one service.
func (ad *adminService) SetGRPCHealth(_ context.Context, req *echopb.SetGRPCHealthRequest) (*echopb.SetGRPCHealthResponse, error) {
	st := healthpb.HealthCheckResponse_ServingStatus(req.GetStatus())
	if err := ad.s.opts.Controls.SetGRPCHealth(req.GetService(), st); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "SetGRPCHealthRequest: %v", err)
	}
	return &echopb.SetGRPCHealthResponse{Service: req.GetService(), Status: req.GetStatus()}, nil
}

// SetTCPOpen opens or closes the TCP echo listener.
func (ad *adminService) SetTCPOpen(_ context.Context, req *echopb.SetTCPOpenRequest) (*echopb.SetTCPOpenResponse, error) {
	ctl := ad.s.opts.Controls
	if err := ctl.SetTCPOpen(req.GetOpen()); err != nil {
		if errors.Is(err, control.ErrNoTCP) {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		return nil, status.Errorf(codes.Internal, "set TCP listener open=%t: %v", req.GetOpen(), err)
	}
	open, _ := ctl.TCPOpen()
	return &echopb.SetTCPOpenResponse{Open: open}, nil
}

// GetLedger returns the attempts of one request id.
func (ad *adminService) GetLedger(_ context.Context, req *echopb.GetLedgerRequest) (*echopb.LedgerEntry, error) {
	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument,
			"GetLedgerRequest field id is empty; accepted: the x-gatewitness-id value of earlier calls")
	}
	e, ok := ad.s.opts.Ledger.Get(req.GetId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "the ledger holds no request id %q (never seen, or expired)", req.GetId())
	}
	return LedgerEntryProto(e), nil
}

// LedgerEntryProto converts a ledger entry to its Admin message.
func LedgerEntryProto(e ledger.Entry) *echopb.LedgerEntry {
	out := &echopb.LedgerEntry{Id: e.ID, Dropped: int32(e.Dropped)}
	for _, a := range e.Attempts {
		pa := &echopb.Attempt{
			Number:      int32(a.Number),
			Arrived:     timestamppb.New(a.Arrived),
			HeadersSent: timestamp(a.HeadersSent),
			Ended:       timestamp(a.Ended),
			Outcome:     string(a.Outcome),
			CancelledAt: timestamp(a.CancelledAt),
			Listener:    a.Listener,
			Protocol:    a.Protocol,
			Conn:        a.Conn,
			Stream:      a.Stream,
			ConnRequest: int32(a.ConnRequest),
			Method:      a.Method,
			Path:        a.Path,
			Fault:       a.Fault,
			Status:      int32(a.Status),
			GrpcCode:    a.GRPCCode,
			BodyBytes:   a.BodyBytes,
			BodySha256:  a.BodySHA256,
			Truncated:   slices.Clone(a.Truncated),
		}
		if len(a.Headers) > 0 {
			pa.Headers = make(map[string]*echopb.Values, len(a.Headers))
			for k, v := range a.Headers {
				pa.Headers[k] = &echopb.Values{Values: v}
			}
		}
		out.Attempts = append(out.Attempts, pa)
	}
	return out
}

// timestamp converts an optional time.
func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
