// Package echopb is the Go code generated from proto/gatewitness/echo/v1/echo.proto:
// the messages and the client and server stubs of the gatewitness.echo.v1 Echo
// and Admin services. Do not edit the *.pb.go files: run hack/gen-proto.sh.
package echopb
