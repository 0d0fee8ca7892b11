package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/cluster/podlog"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
)

// sync runs one pass over every Deployment, then the EndpointSlices. retry
// reports a replica that failed to start for a reason a later attempt may
// not meet (a port in use); a replica waiting for a Secret or ConfigMap is
// retried when one changes.
func (r *Runner) sync(ctx context.Context) (retry bool, err error) {
	var deps appsv1.DeploymentList
	if err := r.c.List(ctx, &deps); err != nil {
		return false, fmt.Errorf("listing Deployments: %w", err)
	}
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods); err != nil {
		return false, fmt.Errorf("listing Pods: %w", err)
	}
	inStore := map[types.NamespacedName]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		inStore[client.ObjectKeyFromObject(p)] = p
	}
	// A Pod deleted by someone else ends its replica, as the kubelet stops
	// its containers; the Deployment gets a new one below.
	for key, rep := range r.replicas {
		if p := inStore[key]; p == nil || p.UID != rep.uid || p.DeletionTimestamp != nil {
			r.stop(rep)
		}
	}

	var errs []error
	live := map[types.UID]bool{}
	slices.SortFunc(deps.Items, func(a, b appsv1.Deployment) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range deps.Items {
		d := &deps.Items[i]
		if d.DeletionTimestamp != nil {
			continue
		}
		live[d.UID] = true
		again, err := r.syncDeployment(ctx, d, inStore)
		retry = retry || again
		if err != nil {
			errs = append(errs, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err))
		}
	}
	for _, rep := range r.replicas {
		if !live[rep.owner] {
			r.stop(rep)
			errs = append(errs, r.deletePod(ctx, rep.key, rep.uid))
		}
	}
	for uid := range r.reported {
		if !live[uid] {
			delete(r.reported, uid)
		}
	}
	// Pods of ours that no replica stands for (left by an earlier runner).
	for key, p := range inStore {
		if p.Annotations[AnnotationRunner] != "" && r.replicas[key] == nil && p.DeletionTimestamp == nil {
			errs = append(errs, r.deletePod(ctx, key, p.UID))
		}
	}
	errs = append(errs, r.syncEndpoints(ctx))
	return retry, errors.Join(errs...)
}

// syncDeployment brings the replicas of d to its spec and writes their Pods
// and d's status.
func (r *Runner) syncDeployment(ctx context.Context, d *appsv1.Deployment, inStore map[types.NamespacedName]*corev1.Pod) (retry bool, err error) {
	var mine []*replica
	for _, rep := range r.replicas {
		if rep.owner == d.UID {
			mine = append(mine, rep)
		}
	}
	t, perr := parseTemplate(d, r.maxReplicas)
	if perr != nil {
		var errs []error
		for _, rep := range mine {
			r.stop(rep)
			errs = append(errs, r.deletePod(ctx, rep.key, rep.uid))
		}
		if r.reported[d.UID] != perr.Error() {
			r.reported[d.UID] = perr.Error()
			r.log.Error(perr, "deployment cannot run in-process", "deployment", d.Namespace+"/"+d.Name)
		}
		errs = append(errs, r.writeStatus(ctx, d, nil, "", perr))
		return false, errors.Join(errs...)
	}
	delete(r.reported, d.UID)

	var current, old []*replica
	for _, rep := range mine {
		if rep.hash == t.hash {
			current = append(current, rep)
		} else {
			old = append(old, rep)
		}
	}
	// Keep serving replicas first, then the oldest, when scaling down.
	slices.SortFunc(current, func(a, b *replica) int {
		if (a.backend == nil) != (b.backend == nil) {
			if a.backend != nil {
				return -1
			}
			return 1
		}
		return cmp.Or(a.created.Compare(b.created.Time), cmp.Compare(a.key.Name, b.key.Name))
	})
	want := 1
	if d.Spec.Replicas != nil {
		want = int(*d.Spec.Replicas)
	}
	var errs []error
	for _, rep := range current[min(want, len(current)):] {
		r.stop(rep)
		errs = append(errs, r.deletePod(ctx, rep.key, rep.uid))
	}
	current = current[:min(want, len(current))]
	for len(current) < want {
		rep, err := r.createPod(ctx, d, t)
		if err != nil {
			errs = append(errs, err)
			break
		}
		current = append(current, rep)
	}

	ready := 0
	for _, rep := range current {
		if rep.backend == nil && r.start(ctx, rep, t) {
			retry = true
		}
		if r.isReady(rep) {
			ready++
		}
		errs = append(errs, r.writePodStatus(ctx, rep, inStore[rep.key]))
	}
	// Rolling update: the old replicas go once every new one is ready.
	if ready == want {
		for _, rep := range old {
			r.stop(rep)
			errs = append(errs, r.deletePod(ctx, rep.key, rep.uid))
		}
		old = nil
	}
	errs = append(errs, r.writeStatus(ctx, d, append(current, old...), t.hash, nil))
	return retry, errors.Join(errs...)
}

// createPod writes a new Pending Pod for d and records its replica.
func (r *Runner) createPod(ctx context.Context, d *appsv1.Deployment, t *podTemplate) (*replica, error) {
	tmpl := d.Spec.Template.DeepCopy()
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels[appsv1.DefaultDeploymentUniqueLabelKey] = t.hash
	annotations := map[string]string{AnnotationRunner: "in-process"}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: d.Name + "-" + t.hash + "-",
			Namespace:    d.Namespace,
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: tmpl.Spec,
	}
	pod.Spec.NodeName = NodeName
	if t.proxy && !r.noMesh {
		// As a mesh injector would, at admission: the Pod is stored with
		// its probes rewritten. parseTemplate has rewritten the same
		// template once already, so this does not fail in practice.
		rewritten, err := probeproxy.Rewrite(pod)
		if err != nil {
			return nil, fmt.Errorf("rewriting the probes for the probe proxy: %w", err)
		}
		pod = rewritten
	}
	if err := r.c.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating a pod: %w", err)
	}
	rep := &replica{
		key:       client.ObjectKeyFromObject(pod),
		uid:       pod.UID,
		owner:     d.UID,
		hash:      t.hash,
		pod:       pod,
		created:   metav1.Now().Rfc3339Copy(),
		container: t.container.Name,
		log:       podlog.New(),
	}
	r.mu.Lock()
	r.replicas[rep.key] = rep
	r.mu.Unlock()
	r.log.V(1).Info("pod created", "pod", rep.key.String())
	return rep, nil
}

func (r *Runner) deletePod(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	err := r.c.Delete(ctx, pod, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s: %w", key, err)
	}
	return nil
}
