package runner

import (
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/cluster/store"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/crds"
)

// TestSkipLackingFields: against CRDs whose GRPCRoute has no
// rules[].timeouts (upstream's, without gatewitness's overlay), the
// GEP-3139 tests are skipped naming the field, in the header's note and
// in their skip message; the others still run. Against the CRDs with the
// overlay nothing is skipped.
func TestSkipLackingFields(t *testing.T) {
	all, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	upstreamOnly, err := crds.ParseDir(crds.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	plan := func(list []*apiextensionsv1.CustomResourceDefinition) (*side, string, string) {
		s, err := store.New(store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		gc := &side{suite: &suite.ConformanceTestSuite{SkipTests: sets.New[string]()}}
		for _, ct := range gctests.ConformanceTests {
			gc.planned = append(gc.planned, plannedTest{test: ct, runs: true})
		}
		note, warn := skipLackingFields(withCRDs{WithWatch: client.WithWatch(s), crds: list}, gc, 30*time.Second)
		return gc, note, warn
	}

	gc, note, warn := plan(upstreamOnly)
	if warn != "" {
		t.Fatal(warn)
	}
	const field = "GRPCRoute spec.rules[].timeouts (not in the CRD's schema)"
	for _, p := range gc.planned {
		grpcTimeouts := strings.HasPrefix(p.test.ShortName, "GRPCRouteMaxStreamDuration") || p.test.ShortName == "GRPCRouteStrictEnforcement" || p.test.ShortName == "GRPCRouteTimeoutPropagation"
		if grpcTimeouts != !p.runs || grpcTimeouts != gc.suite.SkipTests.Has(p.test.ShortName) {
			t.Errorf("%s: runs %v, in SkipTests %v; want it skipped: %v", p.test.ShortName, p.runs, gc.suite.SkipTests.Has(p.test.ShortName), grpcTimeouts)
		}
		if !grpcTimeouts {
			continue
		}
		if msg, _ := skipReason(p, nil, nil); !strings.Contains(msg, field) {
			t.Errorf("%s: skip message %q; want it to name %s", p.test.ShortName, msg, field)
		}
		if !strings.Contains(note, p.test.ShortName+" ("+field+")") {
			t.Errorf("the header's note %q does not name %s and the field", note, p.test.ShortName)
		}
	}
	if !strings.HasPrefix(note, "5 skipped: ") {
		t.Errorf("note %q; want the 5 GRPCRoute timeout tests", note)
	}

	gc, note, warn = plan(all)
	if note != "" || warn != "" || gc.suite.SkipTests.Len() != 0 {
		t.Errorf("with the overlay: note %q, warning %q, skipped %v; want nothing skipped", note, warn, gc.suite.SkipTests.UnsortedList())
	}
}
