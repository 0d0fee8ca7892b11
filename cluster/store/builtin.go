package store

import (
	"fmt"
	"net/netip"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resetStatus clears the status of a built-in object being created, as the
// API server's strategies do.
func resetStatus(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{}
	case *corev1.Service:
		o.Status = corev1.ServiceStatus{}
	case *corev1.Pod:
		o.Status = corev1.PodStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	}
}

// defaultBuiltin applies the defaults of built-in kinds that the conformance
// suite, the pod runner and a gateway controller read. old is nil on create.
//
//   - Namespace: status.phase Active, spec.finalizers [kubernetes].
//   - Service: type ClusterIP, sessionAffinity None, ipFamilies [IPv4],
//     ipFamilyPolicy SingleStack, internalTrafficPolicy Cluster, port
//     protocol TCP and targetPort = port (the clusterIP is allocated by the
//     store).
//   - Pod: status.phase Pending, restartPolicy Always, dnsPolicy ClusterFirst.
//   - Deployment: replicas 1, strategy RollingUpdate 25%/25%,
//     revisionHistoryLimit 10, progressDeadlineSeconds 600.
//   - Secret: type Opaque.
//
// Container-level defaults (imagePullPolicy, terminationMessagePath, ...)
// are not applied.
func defaultBuiltin(obj, old runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		if old == nil {
			o.Status.Phase = corev1.NamespaceActive
			if len(o.Spec.Finalizers) == 0 {
				o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
			}
		}
	case *corev1.Service:
		sp := &o.Spec
		if sp.Type == "" {
			sp.Type = corev1.ServiceTypeClusterIP
		}
		if sp.SessionAffinity == "" {
			sp.SessionAffinity = corev1.ServiceAffinityNone
		}
		if sp.Type != corev1.ServiceTypeExternalName {
			if len(sp.IPFamilies) == 0 {
				sp.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
			}
			if sp.IPFamilyPolicy == nil {
				p := corev1.IPFamilyPolicySingleStack
				sp.IPFamilyPolicy = &p
			}
			if sp.InternalTrafficPolicy == nil {
				p := corev1.ServiceInternalTrafficPolicyCluster
				sp.InternalTrafficPolicy = &p
			}
		}
		for i := range sp.Ports {
			p := &sp.Ports[i]
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
			if p.TargetPort == (intstr.IntOrString{}) {
				p.TargetPort = intstr.FromInt32(p.Port)
			}
		}
	case *corev1.Pod:
		if old == nil && o.Status.Phase == "" {
			o.Status.Phase = corev1.PodPending
		}
		if o.Spec.RestartPolicy == "" {
			o.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}
		if o.Spec.DNSPolicy == "" {
			o.Spec.DNSPolicy = corev1.DNSClusterFirst
		}
	case *appsv1.Deployment:
		sp := &o.Spec
		if sp.Replicas == nil {
			one := int32(1)
			sp.Replicas = &one
		}
		if sp.Strategy.Type == "" {
			sp.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		}
		if sp.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
			if sp.Strategy.RollingUpdate == nil {
				sp.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
			}
			q := intstr.FromString("25%")
			if sp.Strategy.RollingUpdate.MaxUnavailable == nil {
				sp.Strategy.RollingUpdate.MaxUnavailable = &q
			}
			if sp.Strategy.RollingUpdate.MaxSurge == nil {
				sp.Strategy.RollingUpdate.MaxSurge = &q
			}
		}
		if sp.RevisionHistoryLimit == nil {
			n := int32(10)
			sp.RevisionHistoryLimit = &n
		}
		if sp.ProgressDeadlineSeconds == nil {
			n := int32(600)
			sp.ProgressDeadlineSeconds = &n
		}
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
	}
}

// allocates reports whether allocateLocked may change objects of the kind
// (so that they cannot be decoded before it ran).
func allocates(info *kindInfo) bool { return info.gk.Group == "" && info.gk.Kind == "Service" }

// allocateLocked gives a Service a clusterIP from the service range (keeping
// the one it has on update); old is nil on create.
func (s *Store) allocateLocked(info *kindInfo, u, old *unstructured.Unstructured, dryRun bool) error {
	if !allocates(info) {
		return nil
	}
	typ, _, _ := unstructured.NestedString(u.Object, "spec", "type")
	if typ == string(corev1.ServiceTypeExternalName) {
		return nil
	}
	ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP")
	if old != nil {
		oldIP, _, _ := unstructured.NestedString(old.Object, "spec", "clusterIP")
		switch {
		case ip == "":
			ip = oldIP
		case ip != oldIP && oldIP != "":
			return apierrors.NewInvalid(info.gk, u.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "clusterIP"), ip, "field is immutable")})
		}
	} else if ip != "" && ip != corev1.ClusterIPNone {
		addr, err := netip.ParseAddr(ip)
		if err != nil || !s.serviceCIDR.Contains(addr) {
			return apierrors.NewInvalid(info.gk, u.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), ip,
					fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, ip, s.serviceCIDR))})
		}
		if s.ipUsed[addr] {
			return apierrors.NewInvalid(info.gk, u.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), ip,
					fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", ip))})
		}
		if !dryRun {
			s.ipUsed[addr] = true
		}
	} else if ip == "" {
		addr, err := s.nextIPLocked()
		if err != nil {
			return err
		}
		ip = addr.String()
		if !dryRun {
			s.ipUsed[addr] = true
		}
	}
	if err := unstructured.SetNestedField(u.Object, ip, "spec", "clusterIP"); err != nil {
		return err
	}
	return unstructured.SetNestedStringSlice(u.Object, []string{ip}, "spec", "clusterIPs")
}

// nextIPLocked returns a free address of the service range, scanning from
// the last one handed out.
func (s *Store) nextIPLocked() (netip.Addr, error) {
	start := s.ipNext
	for {
		a := s.ipNext
		s.ipNext = s.ipNext.Next()
		if !s.serviceCIDR.Contains(s.ipNext) || !s.serviceCIDR.Contains(s.ipNext.Next()) {
			s.ipNext = s.serviceCIDR.Addr().Next() // wrap, skipping network and broadcast
		}
		if !s.ipUsed[a] {
			return a, nil
		}
		if s.ipNext == start {
			return netip.Addr{}, apierrors.NewInternalError(fmt.Errorf("store: no free clusterIP left in %s", s.serviceCIDR))
		}
	}
}

// releaseLocked frees what a removed object held.
func (s *Store) releaseLocked(info *kindInfo, u *unstructured.Unstructured) {
	if info.gk.Group != "" || info.gk.Kind != "Service" {
		return
	}
	ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP")
	if addr, err := netip.ParseAddr(ip); err == nil {
		delete(s.ipUsed, addr)
	}
}
