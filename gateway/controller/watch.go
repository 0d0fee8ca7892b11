package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gatecheck/gatecheck/internal/watchloop"
)

// watchedKinds are the lists the controller watches. Any event on any of
// them schedules one full recompute. ConfigMaps are watched for CA
// certificates that later features (BackendTLSPolicy, frontend client
// validation) will read.
func watchedKinds() []func() client.ObjectList {
	return []func() client.ObjectList{
		func() client.ObjectList { return &gwv1.GatewayClassList{} },
		func() client.ObjectList { return &gwv1.GatewayList{} },
		func() client.ObjectList { return &gwv1.HTTPRouteList{} },
		func() client.ObjectList { return &gwv1.GRPCRouteList{} },
		func() client.ObjectList { return &gwv1.TLSRouteList{} },
		func() client.ObjectList { return &gwv1.ReferenceGrantList{} },
		func() client.ObjectList { return &gwv1beta1.ReferenceGrantList{} },
		func() client.ObjectList { return &corev1.ServiceList{} },
		func() client.ObjectList { return &discoveryv1.EndpointSliceList{} },
		func() client.ObjectList { return &corev1.SecretList{} },
		func() client.ObjectList { return &corev1.NamespaceList{} },
		func() client.ObjectList { return &corev1.ConfigMapList{} },
	}
}

// Retry delays for a failed watch or recompute: doubling from the first to
// the last, so a broken API server is not hammered and a healed one is
// picked up soon.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = 5 * time.Second
)

// watchKind keeps one watch open on a kind until ctx is done, and pokes the
// controller on every event. Whenever a watch is (re)established the
// controller is poked too: events may have been missed while it was down,
// and the recompute re-lists everything. A kind the server does not serve
// is retried at the longest delay.
func (c *Controller) watchKind(ctx context.Context, newList func() client.ObjectList) {
	watchloop.Run(ctx, c.opts.Client, newList, watchloop.Options{
		Notify: c.poke,
		Failed: func(err error, delay time.Duration) time.Duration {
			if isUnknownKind(err) {
				return maxRetry
			}
			c.opts.Logger.V(1).Info("watch failed; retrying", "list", fmt.Sprintf("%T", newList()), "error", err.Error(), "delay", delay)
			return delay
		},
		MinDelay: minRetry,
		MaxDelay: maxRetry,
	})
}
