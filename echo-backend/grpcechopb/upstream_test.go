package grpcechopb_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	// Links upstream's generated GrpcEcho (whose import path differs
	// between Gateway API releases) through its client, whose path does
	// not, so the test compares against the linked release's descriptor.
	_ "sigs.k8s.io/gateway-api/conformance/utils/grpc"

	"github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
)

// TestSameWireContractAsUpstream checks UpstreamFile against upstream's own
// generated descriptor, linked into this test: the same file name, package,
// messages with the same fields (number, name, type, cardinality) and the
// same service and methods. It is what makes our clients and servers
// interoperate with echo-basic's, and it also shows that linking both
// generated packages into one program does not trip the protobuf registry.
func TestSameWireContractAsUpstream(t *testing.T) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(grpcechopb.UpstreamServiceName)
	if err != nil {
		t.Fatalf("upstream's GrpcEcho is not linked: %v", err)
	}
	up := protodesc.ToFileDescriptorProto(d.ParentFile())
	fd, err := grpcechopb.UpstreamFile()
	if err != nil {
		t.Fatal(err)
	}
	ours := protodesc.ToFileDescriptorProto(fd)

	if ours.GetName() != up.GetName() || ours.GetPackage() != up.GetPackage() {
		t.Errorf("file %s package %s, want %s package %s", ours.GetName(), ours.GetPackage(), up.GetName(), up.GetPackage())
	}
	messages := func(f *descriptorpb.FileDescriptorProto) map[string]*descriptorpb.DescriptorProto {
		m := map[string]*descriptorpb.DescriptorProto{}
		for _, d := range f.GetMessageType() {
			m[d.GetName()] = d
		}
		return m
	}
	upMsgs, ourMsgs := messages(up), messages(ours)
	if len(upMsgs) != len(ourMsgs) {
		t.Errorf("%d messages, want upstream's %d", len(ourMsgs), len(upMsgs))
	}
	for name, um := range upMsgs {
		om, ok := ourMsgs[name]
		if !ok {
			t.Errorf("message %s missing", name)
			continue
		}
		if len(om.GetField()) != len(um.GetField()) || len(om.GetNestedType()) != 0 || len(um.GetNestedType()) != 0 {
			t.Errorf("message %s: %d fields, want %d (and no nested types)", name, len(om.GetField()), len(um.GetField()))
			continue
		}
		for i, uf := range um.GetField() {
			of := om.GetField()[i]
			if of.GetNumber() != uf.GetNumber() || of.GetName() != uf.GetName() || of.GetType() != uf.GetType() ||
				of.GetTypeName() != uf.GetTypeName() || of.GetLabel() != uf.GetLabel() {
				t.Errorf("message %s field %d: %v, want upstream's %v", name, i, of, uf)
			}
		}
	}
	if len(ours.GetService()) != 1 || len(up.GetService()) != 1 {
		t.Fatalf("%d services, upstream %d; want 1 each", len(ours.GetService()), len(up.GetService()))
	}
	os, us := ours.GetService()[0], up.GetService()[0]
	if os.GetName() != us.GetName() || len(os.GetMethod()) != len(us.GetMethod()) {
		t.Fatalf("service %s with %d methods, want %s with %d", os.GetName(), len(os.GetMethod()), us.GetName(), len(us.GetMethod()))
	}
	for i, um := range us.GetMethod() {
		om := os.GetMethod()[i]
		if om.GetName() != um.GetName() || om.GetInputType() != um.GetInputType() || om.GetOutputType() != um.GetOutputType() ||
			om.GetClientStreaming() != um.GetClientStreaming() || om.GetServerStreaming() != um.GetServerStreaming() {
			t.Errorf("method %d: %v, want upstream's %v", i, om, um)
		}
	}
	// The wire names the constants give.
	for _, m := range []struct {
		ours string
		name protoreflect.Name
	}{{grpcechopb.UpstreamEchoMethod, "Echo"}, {grpcechopb.UpstreamEchoTwoMethod, "EchoTwo"}, {grpcechopb.UpstreamEchoThreeMethod, "EchoThree"}} {
		if want := "/" + string(d.FullName()) + "/" + string(m.name); m.ours != want {
			t.Errorf("method constant %q, want %q", m.ours, want)
		}
	}
}
