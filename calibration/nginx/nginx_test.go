package nginx_test

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/calibration/nginx"
	"github.com/gatewitness/gatewitness/calibration/proxy"
	"github.com/gatewitness/gatewitness/calibration/proxy/proxytest"
)

// TestRender: the prefix is "location = /a" and "location ^~ /a/" in the
// host's server, the retry stanza proxy_next_upstream with the codes and
// one endpoint line per attempt; HTTP10Upstream leaves proxy_http_version
// at its default.
func TestRender(t *testing.T) {
	s, err := proxy.Flatten(proxytest.Snapshot("127.2.0.9:3000", 500), proxy.NewSockets())
	if err != nil {
		t.Fatal(err)
	}
	conf, err := nginx.Flavor{}.Render(s, "127.0.0.1:1", "7", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"server_name h.test;", "location = /a {", "location ^~ /a/ {", "proxy_http_version 1.1;",
		"proxy_next_upstream error invalid_header non_idempotent http_503 http_500;", "proxy_next_upstream_tries 3;",
		`return 200 "7";`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, conf)
		}
	}
	if n := strings.Count(conf, "server 127.2.0.9:3000 weight=1 max_fails=0;"); n != 3 {
		t.Errorf("the endpoint is listed %d times, want 3 (one per attempt)", n)
	}
	old, _ := nginx.NewFlavor(nginx.Options{HTTP10Upstream: true}).Render(s, "127.0.0.1:1", "7", t.TempDir())
	if strings.Contains(old, "proxy_http_version") {
		t.Error("HTTP10Upstream still sets proxy_http_version")
	}
}

// TestAdapterServesAfterApply drives the real nginx.
func TestAdapterServesAfterApply(t *testing.T) {
	if !nginx.Installed() {
		t.Skip("nginx is not installed: apt-get install -y haproxy nginx")
	}
	a, err := nginx.New(nginx.Options{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	proxytest.ServesAfterApply(t, a)
}
