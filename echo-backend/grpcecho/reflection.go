package grpcecho

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	upstreampb "github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
)

// registerReflection serves gRPC server reflection (v1 and v1alpha, as
// reflection.Register does) that also describes upstream's GrpcEcho under
// echo-basic's names, as echo-basic's own reflection does: the service is
// served under that name, but its descriptor is registered under
// gatewitness's (see grpcechopb).
func registerReflection(gs *grpc.Server) {
	opts := reflection.ServerOptions{Services: gs, DescriptorResolver: upstreamResolver()}
	reflectionv1.RegisterServerReflectionServer(gs, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(gs, reflection.NewServer(opts))
}

// upstreamResolver resolves echo-basic's grpcecho.proto and its names from
// grpcechopb.UpstreamFile, and everything else from the global registry.
// It is built once per process.
var upstreamResolver = sync.OnceValue(func() protodesc.Resolver {
	fd, err := upstreampb.UpstreamFile()
	if err != nil {
		panic(err) // the generated descriptor is fixed: a bug, found by the package's tests
	}
	local := new(protoregistry.Files)
	if err := local.RegisterFile(fd); err != nil {
		panic(err)
	}
	return resolver{local}
})

type resolver struct{ local *protoregistry.Files }

func (r resolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.local.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (r resolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.local.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
