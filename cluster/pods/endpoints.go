package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncEndpoints writes the EndpointSlices of every Service with a selector
// from the Pods it selects, and deletes the runner's slices of Services
// that are gone or lost their selector. It lists the Pods afresh, so the
// Pods written earlier in the same pass count.
func (r *Runner) syncEndpoints(ctx context.Context) error {
	var svcs corev1.ServiceList
	if err := r.c.List(ctx, &svcs); err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods); err != nil {
		return fmt.Errorf("listing Pods: %w", err)
	}
	var have discoveryv1.EndpointSliceList
	if err := r.c.List(ctx, &have, client.MatchingLabels{discoveryv1.LabelManagedBy: ManagedBy}); err != nil {
		return fmt.Errorf("listing EndpointSlices: %w", err)
	}
	byNS := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	want := map[types.NamespacedName]*discoveryv1.EndpointSlice{}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if svc.DeletionTimestamp != nil || len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		for _, s := range endpointSlices(svc, byNS[svc.Namespace]) {
			want[client.ObjectKeyFromObject(s)] = s
		}
	}

	var errs []error
	for i := range have.Items {
		cur := &have.Items[i]
		key := client.ObjectKeyFromObject(cur)
		w, ok := want[key]
		if !ok {
			if err := r.c.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting EndpointSlice %s: %w", key, err))
			}
			continue
		}
		delete(want, key)
		if sameSlice(cur, w) {
			continue
		}
		next := cur.DeepCopy()
		next.Labels, next.OwnerReferences = w.Labels, w.OwnerReferences
		next.AddressType, next.Endpoints, next.Ports = w.AddressType, w.Endpoints, w.Ports
		if err := r.c.Update(ctx, next); err != nil {
			errs = append(errs, fmt.Errorf("updating EndpointSlice %s: %w", key, err))
		}
	}
	keys := make([]types.NamespacedName, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		if err := r.c.Create(ctx, want[k]); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("creating EndpointSlice %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

func sameSlice(a, b *discoveryv1.EndpointSlice) bool {
	return a.AddressType == b.AddressType &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		equality.Semantic.DeepEqual(a.Endpoints, b.Endpoints) &&
		equality.Semantic.DeepEqual(a.Ports, b.Ports)
}

// endpointSlices returns the slices of svc: one per distinct set of
// resolved ports (pods can resolve a named targetPort differently), or one
// empty placeholder when no pod is selected. Pods that are being deleted,
// have no IP or have finished are left out; an endpoint is serving when
// its pod's Ready condition is True, and ready when it is serving or the
// Service publishes not-ready addresses, as the EndpointSlice controller
// has it.
func endpointSlices(svc *corev1.Service, pods []*corev1.Pod) []*discoveryv1.EndpointSlice {
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	type group struct {
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
	}
	groups := map[string]*group{}
	var order []string
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !sel.Matches(labels.Set(p.Labels)) ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ports := endpointPorts(svc, p)
		if len(ports) == 0 && len(svc.Spec.Ports) > 0 {
			continue
		}
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &group{ports: ports}
			groups[key] = g
			order = append(order, key)
		}
		serving := podReady(p)
		ready := serving || svc.Spec.PublishNotReadyAddresses
		no := false
		ep := discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &no},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		}
		if p.Spec.NodeName != "" {
			node := p.Spec.NodeName
			ep.NodeName = &node
		}
		g.endpoints = append(g.endpoints, ep)
	}
	if len(order) == 0 {
		groups[""] = &group{}
		order = []string{""}
	}
	yes := true
	var out []*discoveryv1.EndpointSlice
	for _, key := range order {
		g := groups[key]
		lbls := map[string]string{}
		for k, v := range svc.Labels {
			lbls[k] = v
		}
		lbls[discoveryv1.LabelServiceName] = svc.Name
		lbls[discoveryv1.LabelManagedBy] = ManagedBy
		out = append(out, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:      svc.Name + "-" + shortHash(key),
				Namespace: svc.Namespace,
				Labels:    lbls,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
					Controller: &yes, BlockOwnerDeletion: &yes,
				}},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   g.endpoints,
			Ports:       g.ports,
		})
	}
	return out
}

// endpointPorts resolves svc's ports against pod: a numeric targetPort is
// taken as is, a named one is looked up among the pod's container ports
// (and left out when no container declares it).
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		var num int32
		switch sp.TargetPort.Type {
		case intstr.Int:
			num = sp.TargetPort.IntVal
			if num == 0 {
				num = sp.Port
			}
		case intstr.String:
			num = namedPort(pod, sp.TargetPort.StrVal, sp.Protocol)
		}
		if num == 0 {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ep := discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &num}
		if sp.AppProtocol != nil {
			ap := *sp.AppProtocol
			ep.AppProtocol = &ap
		}
		out = append(out, ep)
	}
	return out
}

func namedPort(pod *corev1.Pod, name string, proto corev1.Protocol) int32 {
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if p.Name == name && pp == proto {
				return p.ContainerPort
			}
		}
	}
	return 0
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d;", *p.Name, *p.Protocol, *p.Port)
	}
	return b.String()
}

func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
