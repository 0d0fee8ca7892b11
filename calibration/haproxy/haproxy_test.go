package haproxy_test

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/calibration/haproxy"
	"github.com/gatewitness/gatewitness/calibration/proxy"
	"github.com/gatewitness/gatewitness/calibration/proxy/proxytest"
)

// TestRender: the route's match is an element-wise prefix on its host,
// its retry stanza retry-on with the codes; a code retry-on cannot name is
// left out and named.
func TestRender(t *testing.T) {
	s, err := proxy.Flatten(proxytest.Snapshot("127.2.0.9:3000"), proxy.NewSockets())
	if err != nil {
		t.Fatal(err)
	}
	conf, err := haproxy.Flavor{}.Render(s, "127.0.0.1:1", "7", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`use_backend r0_p0 if { var(txn.host) -m str "h.test" } { path -m str "/a" } || { var(txn.host) -m str "h.test" } { path -m beg "/a/" }`,
		"retries 2", "retry-on conn-failure empty-response junk-response 503", "option http-buffer-request", "option http-no-delay",
		"server s0 127.2.0.9:3000 weight 1", `string "7"`, "expose-fd listeners",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, conf)
		}
	}
	s, _ = proxy.Flatten(proxytest.Snapshot("127.2.0.9:3000", 505), proxy.NewSockets())
	if _, err := (haproxy.Flavor{}).Render(s, "127.0.0.1:1", "7", t.TempDir()); err == nil || !strings.Contains(err.Error(), "retry code 505") {
		t.Errorf("a 505 retry code: error %v, want one naming it", err)
	}
}

// TestAdapterServesAfterApply drives the real haproxy.
func TestAdapterServesAfterApply(t *testing.T) {
	if !haproxy.Installed() {
		t.Skip("haproxy is not installed: apt-get install -y haproxy nginx")
	}
	a, err := haproxy.New(haproxy.Options{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	proxytest.ServesAfterApply(t, a)
}
