package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/gateway/standalone"
)

func TestGatewayFlagErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--kubeconfig is required"},
		{[]string{"--kubeconfig", "k", "extra"}, `unexpected argument "extra"`},
		{[]string{"--kubeconfig", "k", "--listen-host", "localhost"}, `--listen-host "localhost": not an IP address or prefix; want a prefix such as 127.1.0.0/16`},
		{[]string{"--kubeconfig", "k", "--listen-host", "127.1.0.0/33"}, `--listen-host "127.1.0.0/33"`},
		{[]string{"--kubeconfig", "k", "--shared-address"}, "--shared-address with --listen-host 127.1.0.0/16: want the one address every Gateway shares"},
		{[]string{"--kubeconfig", "k", "--controller-name", "reference"}, `--controller-name "reference": want a domain-prefixed path`},
		{[]string{"--kubeconfig", missing}, "--kubeconfig " + missing},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	} {
		code, _, errs := run(append([]string{"gateway"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("gatewitness gateway %q: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

func TestGatewayHelp(t *testing.T) {
	code, errs, stderr := run("gateway", "-help")
	if code != 0 || stderr != "" {
		t.Fatalf("gatewitness gateway -help: exit %d, stderr %q; want 0 and the help on stdout", code, stderr)
	}
	for _, want := range []string{"Usage: gatewitness gateway --kubeconfig PATH", "-kubeconfig", "-listen-host", "-controller-name", "-gateway-class", "-supported-features", "-shared-address", "SIGINT",
		"-limit-max-backend-requests", "-limit-response-write-timeout", "-limit-idle-frame-burst", "(default 1m0s)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("gatewitness gateway -help does not mention %q:\n%s", want, errs)
		}
	}
}

func TestGatewayFlagDefaults(t *testing.T) {
	t.Setenv("KUBECONFIG", "/from/env")
	g, err := parseGatewayFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if g.kubeconfig != "/from/env" {
		t.Errorf("kubeconfig %q; want $KUBECONFIG", g.kubeconfig)
	}
	if g.opts.Addresses != netip.MustParsePrefix(standalone.DefaultAddresses) || g.opts.GatewayClassName != "gatewitness" ||
		g.opts.ControllerName != standalone.DefaultControllerName {
		t.Errorf("defaults %+v", g.opts)
	}
	// The reference gateway's features as its class's status holds them:
	// upstream's first, then gatewitness's, at most 64.
	want := runner.ReferenceClassFeatures()
	if !slices.Equal(g.opts.SupportedFeatures, want) {
		t.Errorf("supported features %v; want the reference gateway's, as the class's status holds them: %v", g.opts.SupportedFeatures, want)
	}
	if len(want) > features.MaxGatewayClassFeatures {
		t.Errorf("%d supported features; a GatewayClass's status holds at most %d", len(want), features.MaxGatewayClassFeatures)
	}

	g, err = parseGatewayFlags([]string{"--listen-host", "127.0.0.1", "--gateway-class", "", "--supported-features", "Gateway, HTTPRoute,"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if g.opts.Addresses != netip.MustParsePrefix("127.0.0.1/32") {
		t.Errorf("--listen-host 127.0.0.1 gave %s; want the single address 127.0.0.1/32", g.opts.Addresses)
	}
	if g.opts.GatewayClassName != "" || !slices.Equal(g.opts.SupportedFeatures, []gwv1.FeatureName{"Gateway", "HTTPRoute"}) || g.opts.SharedAddress {
		t.Errorf("options %+v", g.opts)
	}
	g, err = parseGatewayFlags([]string{"--kubeconfig", "k", "--listen-host", "10.0.0.5", "--shared-address"}, io.Discard)
	if err != nil || !g.opts.SharedAddress || g.opts.Addresses != netip.MustParsePrefix("10.0.0.5/32") {
		t.Errorf("--listen-host 10.0.0.5 --shared-address: %+v, %v; want the shared address 10.0.0.5", g, err)
	}
	if _, err := parseGatewayFlags([]string{"-help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-help: %v; want flag.ErrHelp", err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and a polling reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeGatewayUntilCancelled runs the command's serving part against
// the in-memory store (the stand-in for an API server): it says what it
// serves once the class is accepted, and stops cleanly with exit 0 when
// its context ends, as on SIGINT.
func TestServeGatewayUntilCancelled(t *testing.T) {
	s, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := parseGatewayFlags([]string{"--kubeconfig", "unused", "--listen-host", "127.73.9.0/24", "--gateway-class", "cmd-test"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- serveGateway(ctx, s, g, &stdout, &stderr) }()

	const serving = "gatewitness gateway: serving GatewayClass cmd-test (controller gatewitness.dev/reference-gateway); Gateway addresses from 127.73.9.0/24"
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(stdout.String(), serving) {
		select {
		case c := <-code:
			t.Fatalf("serveGateway returned %d before serving; stderr:\n%s", c, stderr.String())
		case <-deadline.C:
			t.Fatalf("no serving line within 30s; stdout %q, stderr:\n%s", stdout.String(), stderr.String())
		case <-tick.C:
		}
	}
	gc := &gwv1.GatewayClass{}
	if err := s.Get(ctx, client.ObjectKey{Name: "cmd-test"}, gc); err != nil {
		t.Fatalf("GatewayClass cmd-test: %v", err)
	}
	if published := runner.ReferenceClassFeatures(); len(gc.Status.SupportedFeatures) != len(published) {
		t.Errorf("GatewayClass publishes %d features; want the %d of the reference gateway's that its status holds", len(gc.Status.SupportedFeatures), len(published))
	}

	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d after cancel; want 0; stderr:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serveGateway did not return within 30s of its context ending")
	}
	if !strings.HasSuffix(stdout.String(), "gatewitness gateway: stopped\n") {
		t.Errorf("stdout %q; want it to end with the stopped line", stdout.String())
	}
}
