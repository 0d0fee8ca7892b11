package dataplane_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// benchClient sends benchmark requests through a data plane serving one
// Config, each fault-carrying request under a request id of its own (fault
// specs count attempts per id, so ids are never reused).
type benchClient struct {
	addr   string
	client *http.Client
	idBase string
	ids    int
}

// serveBench starts a data plane with cfg (closed when b ends) and returns a
// client for its gw-ns/gw:80 listener; idBase prefixes the request ids.
func serveBench(b *testing.B, cfg *ir.Config, idBase string) *benchClient {
	b.Helper()
	s := dataplane.New(dataplane.Options{})
	b.Cleanup(func() { s.Close() })
	if err := s.Apply(cfg); err != nil {
		b.Fatal(err)
	}
	addr, _ := s.Addr("gw-ns", "gw", 80)
	return &benchClient{addr: addr, idBase: idBase,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}}
}

// run sends method path (with payload, if any, and the fault spec, if any)
// in a b.Loop, failing unless each answer has status want.
func (c *benchClient) run(b *testing.B, method, path string, payload []byte, spec string, want int) {
	b.ReportAllocs()
	for b.Loop() {
		var rd io.Reader
		if payload != nil {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequest(method, "http://"+c.addr+path, rd)
		if err != nil {
			b.Fatal(err)
		}
		req.Host = "gw.test"
		if spec != "" {
			c.ids++
			req.Header.Set(echowire.IDHeader, fmt.Sprintf("%s-%d", c.idBase, c.ids))
			req.Header.Set(echowire.FaultHeader, spec)
		}
		resp, err := c.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: status %d, want %d", method, path, resp.StatusCode, want)
		}
	}
}
