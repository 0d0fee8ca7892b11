// Package grpcechopb is upstream's GrpcEcho wire contract (the gRPC echo of
// the Gateway API conformance suite's echo-basic): the Go code generated
// from proto/gatewitness/grpcecho/v1/grpcecho.proto, and the functions that
// put it on the wire under echo-basic's service name. Do not edit the
// *.pb.go files: run make proto.
//
// The messages are echo-basic's, field for field. The proto package is
// gatewitness's own, because Go's protobuf registry refuses two linked files
// that declare the same full names and every program that runs upstream's
// tests links upstream's generated code; so the generated client and
// service descriptor name gatewitness.grpcecho.v1.GrpcEcho, which nothing
// serves. Use the Upstream functions instead: they serve and call
// UpstreamServiceName, as echo-basic and upstream's clients do.
package grpcechopb

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// UpstreamProtoPackage is the proto package of echo-basic's grpcecho.proto.
const UpstreamProtoPackage = "gateway_api_conformance.echo_basic.grpcecho"

// UpstreamServiceName is the full name echo-basic serves GrpcEcho under,
// which upstream's conformance client calls.
const UpstreamServiceName = UpstreamProtoPackage + ".GrpcEcho"

// The full methods of GrpcEcho on the wire (a request's :path).
const (
	UpstreamEchoMethod      = "/" + UpstreamServiceName + "/Echo"
	UpstreamEchoTwoMethod   = "/" + UpstreamServiceName + "/EchoTwo"
	UpstreamEchoThreeMethod = "/" + UpstreamServiceName + "/EchoThree"
)

// RegisterUpstreamGrpcEchoServer registers srv with s under
// UpstreamServiceName. The generated handlers report the generated method
// names to interceptors (grpc.UnaryServerInfo.FullMethod); grpc.Method
// gives the method as called.
func RegisterUpstreamGrpcEchoServer(s grpc.ServiceRegistrar, srv GrpcEchoServer) {
	desc := GrpcEcho_ServiceDesc // a copy
	desc.ServiceName = UpstreamServiceName
	s.RegisterService(&desc, srv)
}

// NewUpstreamGrpcEchoClient returns a client that calls GrpcEcho under
// UpstreamServiceName, as upstream's client does: it talks to echo-basic
// and to the echo-backend alike.
func NewUpstreamGrpcEchoClient(cc grpc.ClientConnInterface) GrpcEchoClient {
	return NewGrpcEchoClient(upstreamConn{cc})
}

// upstreamConn renames the generated client's methods to upstream's.
type upstreamConn struct{ cc grpc.ClientConnInterface }

func (c upstreamConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.cc.Invoke(ctx, upstreamMethod(method), args, reply, opts...)
}

func (c upstreamConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.cc.NewStream(ctx, desc, upstreamMethod(method), opts...)
}

// upstreamMethod maps "/gatewitness.grpcecho.v1.GrpcEcho/Echo" to
// UpstreamEchoMethod; other methods are returned unchanged.
func upstreamMethod(m string) string {
	if rest, ok := strings.CutPrefix(m, "/"+GrpcEcho_ServiceDesc.ServiceName+"/"); ok {
		return "/" + UpstreamServiceName + "/" + rest
	}
	return m
}

// UpstreamFile returns this file's descriptor under echo-basic's names
// (file grpcecho.proto, package UpstreamProtoPackage), which is what
// echo-basic's server reflection describes. It is a new descriptor each
// call, not registered anywhere, so it never conflicts with upstream's
// generated code.
func UpstreamFile() (protoreflect.FileDescriptor, error) {
	fdp := protodesc.ToFileDescriptorProto(File_gatewitness_grpcecho_v1_grpcecho_proto)
	from, to := "."+fdp.GetPackage()+".", "."+UpstreamProtoPackage+"."
	rename := func(s *string) {
		if s != nil && strings.HasPrefix(*s, from) {
			*s = to + strings.TrimPrefix(*s, from)
		}
	}
	fdp.Name = proto.String("grpcecho.proto")
	fdp.Package = proto.String(UpstreamProtoPackage)
	fdp.Options = nil // go_package names this package, not echo-basic's
	fdp.SourceCodeInfo = nil
	var messages func([]*descriptorpb.DescriptorProto)
	messages = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				rename(f.TypeName)
			}
			messages(m.NestedType)
		}
	}
	messages(fdp.MessageType)
	for _, s := range fdp.Service {
		for _, m := range s.Method {
			rename(m.InputType)
			rename(m.OutputType)
		}
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		return nil, fmt.Errorf("grpcechopb: renaming the descriptor to %s: %w", UpstreamProtoPackage, err)
	}
	return fd, nil
}
