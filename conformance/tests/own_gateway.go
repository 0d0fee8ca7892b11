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
// whichever replica binds it and whenever. A controller reads
// EndpointSlices and Gateways on watches of their own, so a slice made
// ready just before the Gateway can reach it after the Gateway (on a
// loaded machine, over 100 ms after): a replica that replayed every
// snapshot late would bind the port with the one without endpoints and
// answer 503 until the next; the lagging-replica breakage reloads with
// the newest snapshot instead, as a proxy reading its configuration does.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
)

// backendsReady waits until every Service named in infraNamespace has a
// ready endpoint in its EndpointSlices (awaitReadyEndpoints), and fails t
// naming those that have none.
func backendsReady(t *testing.T, s *suite.ConformanceTestSuite, services ...string) {
	t.Helper()
	if err := awaitReadyEndpoints(s.Client, s.TimeoutConfig.MaxTimeToConsistency, s.TimeoutConfig.DefaultPollInterval, services); err != nil {
		t.Fatalf("before the test's Gateway is created: %v", err)
	}
}

// awaitReadyEndpoints polls c every interval, for at most within, until
// every Service named in infraNamespace has a ready endpoint, and
// otherwise returns an error naming those that have none.
func awaitReadyEndpoints(c client.Client, within, interval time.Duration, services []string) error {
	var missing []string
	ready := testclient.Poll(within, interval, func() bool {
		missing = missing[:0]
		for _, svc := range services {
			n, err := readyEndpoints(c, svc)
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
		return fmt.Errorf("the backends of the test's routes are not ready within %v: Service %s in %s",
			within, strings.Join(missing, ", "), infraNamespace)
	}
	return nil
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
