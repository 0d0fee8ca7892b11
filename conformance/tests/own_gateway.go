package tests

// A Gateway of a test's own, created last. A replica of the data plane
// that lags (evidence.go) cannot be seen lagging on a port it has not yet
// opened: two proxy processes on sockets bound with SO_REUSEPORT share
// only the sockets that are bound, so until the late replica binds a new
// Gateway's port every connection goes to the other, and the evidence's
// answers all come from that one. The late replica then binds the port
// with the snapshot of the Gateway's creation: a test whose Gateway was
// created with its routes and backends, before the backends' Pods were
// ready, would get that replica's 503s (no ready endpoint) for as long
// as it lags, long after its evidence. So a test's own Gateway is created
// only once its routes exist and each of its backends has a ready
// endpoint: the first snapshot that holds the listener serves the routes,
// whichever replica binds it and whenever.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
)

// backendsReady waits until every Service named in infraNamespace has a
// ready endpoint in its EndpointSlices, polling at the suite's interval
// for at most MaxTimeToConsistency, and fails t naming those that have
// none.
func backendsReady(t *testing.T, s *suite.ConformanceTestSuite, services ...string) {
	t.Helper()
	var missing []string
	ready := testclient.Poll(s.TimeoutConfig.MaxTimeToConsistency, s.TimeoutConfig.DefaultPollInterval, func() bool {
		missing = missing[:0]
		for _, svc := range services {
			n, err := readyEndpoints(s.Client, svc)
			switch {
			case err != nil:
				missing = append(missing, fmt.Sprintf("%s (%v)", svc, err))
			case n == 0:
				missing = append(missing, svc+" (no ready endpoint)")
			}
		}
		return len(missing) == 0
	})
	if !ready {
		t.Fatalf("the backends of the test's routes are not ready within %v, before its Gateway is created: Service %s in %s",
			s.TimeoutConfig.MaxTimeToConsistency, strings.Join(missing, ", "), infraNamespace)
	}
}

// httpGateway is a Gateway named name in infraNamespace of class, with
// one HTTP listener "http" on port 80 for the routes of its namespace,
// and the listeners extra.
func httpGateway(name, class string, extra ...gwv1.Listener) *gwv1.Gateway {
	same := gwv1.NamespacesFromSame
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: infraNamespace, Name: name},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: gwv1.ObjectName(class),
			Listeners: append([]gwv1.Listener{{
				Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &same}},
			}}, extra...),
		},
	}
}

// createOwnGateway creates gw once the Services backends (the backends of
// the routes that attach to it, created before) have ready endpoints
// (backendsReady), and deletes it when t ends.
func createOwnGateway(t *testing.T, s *suite.ConformanceTestSuite, gw *gwv1.Gateway, backends ...string) {
	t.Helper()
	backendsReady(t, s, backends...)
	ctx, cancel := context.WithTimeout(context.Background(), s.TimeoutConfig.CreateTimeout)
	defer cancel()
	if err := s.Client.Create(ctx, gw); err != nil {
		t.Fatalf("creating Gateway %s/%s of class %s: %v", gw.Namespace, gw.Name, gw.Spec.GatewayClassName, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.TimeoutConfig.DeleteTimeout)
		defer cancel()
		if err := s.Client.Delete(ctx, gw); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Gateway %s/%s: %v", gw.Namespace, gw.Name, err)
		}
	})
}
