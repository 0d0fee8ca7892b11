// Command floor is the "net/http floor" of hack/perf: the least a net/http
// server can do per request under gatewitness's echo contract. It answers
// every request with the same fixed JSON body of about 400 bytes (the size
// of an echo with a pod's details filled in), with the echo's
// Content-Type and X-Content-Type-Options headers, in one Write, so
// net/http sends headers and body in one write system call. It reads
// nothing from the request, keeps no state and logs nothing.
//
//	floor -addr 127.0.0.1:8080
//
// What a real echo costs on top of this is the cost of echoing.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
)

// body is a representative echo: the fields and headers hack/perf's load
// generator makes our echo-backend write, with pod details as a cluster
// would set them.
var body = []byte(`{
 "path": "/echo",
 "host": "127.0.0.1:38123",
 "method": "GET",
 "proto": "HTTP/1.1",
 "headers": {
  "User-Agent": [
   "fortio.org/fortio-1.68.2"
  ]
 },
 "httpPort": "3000",
 "namespace": "gateway-conformance-infra",
 "ingress": "",
 "service": "",
 "pod": "infra-backend-v1-7c9b8d5f4-x2k9q",
 "requestId": "0f8e2c1a-5b7d-4e3f-9a6c-2d1b0e8f7a9c",
 "attempt": 1
}
`)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on, host:port")
	flag.Parse()
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		fmt.Fprintf(os.Stderr, "floor: -addr=%q: accepted: host:port, such as 127.0.0.1:8080: %v\n", *addr, err)
		os.Exit(2)
	}
	srv := &http.Server{Addr: *addr, Handler: http.HandlerFunc(serve)}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
}

// serve answers every request with body.
func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(body)
}
