package echobackend_test

import (
	"slices"
	"testing"

	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
)

// TestReflectionDescribesUpstreamGrpcEcho checks that server reflection, as
// grpcurl uses it, lists GrpcEcho under echo-basic's name and describes it
// in echo-basic's proto package, as echo-basic's does, in a program that
// does not link upstream's generated code (as cmd/echo-backend).
func TestReflectionDescribesUpstreamGrpcEcho(t *testing.T) {
	if _, err := protoregistry.GlobalFiles.FindDescriptorByName(grpcechopb.UpstreamServiceName); err == nil {
		t.Fatal("upstream's generated GrpcEcho is linked into this test binary; the test needs it absent, to see the backend's own descriptor")
	}
	cc, ctx := dialGRPC(t, start(t, map[string]string{"GRPC_ECHO_SERVER": "1", "HTTP_PORT": "0"}))
	stream, err := reflectionv1.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionv1.ServerReflectionRequest) *reflectionv1.ServerReflectionResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatalf("reflection: sending %v: %v", req, err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("reflection: answer to %v: %v", req, err)
		}
		return resp
	}

	list := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}})
	var names []string
	for _, s := range list.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, grpcechopb.UpstreamServiceName) {
		t.Errorf("reflection lists %v, want %s among them", names, grpcechopb.UpstreamServiceName)
	}

	file := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: grpcechopb.UpstreamServiceName,
	}})
	raw := file.GetFileDescriptorResponse().GetFileDescriptorProto()
	if len(raw) == 0 {
		t.Fatalf("reflection has no file for %s: %v", grpcechopb.UpstreamServiceName, file.GetErrorResponse())
	}
	var fdp descriptorpb.FileDescriptorProto
	if err := proto.Unmarshal(raw[0], &fdp); err != nil {
		t.Fatal(err)
	}
	if fdp.GetPackage() != grpcechopb.UpstreamProtoPackage || len(fdp.GetService()) != 1 {
		t.Fatalf("file %s, package %s, %d services; want package %s and GrpcEcho", fdp.GetName(), fdp.GetPackage(), len(fdp.GetService()), grpcechopb.UpstreamProtoPackage)
	}
	for _, m := range fdp.GetService()[0].GetMethod() {
		if want := "." + grpcechopb.UpstreamProtoPackage + ".EchoRequest"; m.GetInputType() != want {
			t.Errorf("method %s takes %s, want %s", m.GetName(), m.GetInputType(), want)
		}
	}
}
