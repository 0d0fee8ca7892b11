package pods

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podStatus is the status the kubelet would report for rep. Times are
// rounded to seconds, as the API stores them, so that an unchanged status
// compares equal to the stored one.
func (r *Runner) podStatus(rep *replica) corev1.PodStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := rep.pod.Spec.Containers
	st := corev1.PodStatus{
		Phase:     corev1.PodPending,
		HostIP:    "127.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "127.0.0.1"}},
		StartTime: &rep.created,
		QOSClass:  corev1.PodQOSBurstable,
	}
	cond := func(t corev1.PodConditionType, ok bool, at metav1.Time, reason, msg string) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: at, Reason: reason, Message: msg}
	}
	running := rep.backend != nil
	ready := rep.ready()
	var names []string
	for _, ct := range c {
		names = append(names, ct.Name)
	}
	switch {
	case ready:
		st.Conditions = []corev1.PodCondition{
			cond(corev1.PodScheduled, true, rep.created, "", ""),
			cond(corev1.PodInitialized, true, rep.created, "", ""),
			cond(corev1.ContainersReady, true, rep.readyAt, "", ""),
			cond(corev1.PodReady, true, rep.readyAt, "", ""),
		}
	case running:
		// The readiness probe has not passed (yet, or any more).
		msg := fmt.Sprintf("containers with unready status: [%s]", rep.container)
		st.Conditions = []corev1.PodCondition{
			cond(corev1.PodScheduled, true, rep.created, "", ""),
			cond(corev1.PodInitialized, true, rep.created, "", ""),
			cond(corev1.ContainersReady, false, rep.readyAt, "ContainersNotReady", msg),
			cond(corev1.PodReady, false, rep.readyAt, "ContainersNotReady", msg),
		}
	default:
		msg := fmt.Sprintf("containers with unready status: %v", names)
		st.Conditions = []corev1.PodCondition{
			cond(corev1.PodScheduled, true, rep.created, "", ""),
			cond(corev1.PodInitialized, true, rep.created, "", ""),
			cond(corev1.ContainersReady, false, rep.created, "ContainersNotReady", msg),
			cond(corev1.PodReady, false, rep.created, "ContainersNotReady", msg),
		}
	}
	if running {
		st.Phase = corev1.PodRunning
		st.PodIP = rep.ip.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	for _, ct := range c {
		cs := corev1.ContainerStatus{Name: ct.Name, Image: ct.Image, ImageID: ct.Image}
		switch {
		case running:
			// Sidecars are not run in-process; they are reported running
			// and ready with the backend so that the pod is whole.
			yes := true
			cs.Ready, cs.Started = ready || ct.Name != rep.container, &yes
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: rep.started}
		case rep.why != nil && imageAccepted(ct.Image):
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: rep.why.reason, Message: rep.why.message}
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonCreating}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return st
}

// writePodStatus writes rep's status to its Pod when it differs.
func (r *Runner) writePodStatus(ctx context.Context, rep *replica, stored *corev1.Pod) error {
	pod := stored
	if pod == nil || pod.UID != rep.uid {
		pod = rep.pod.DeepCopy() // created in this pass: the list did not see it
	} else {
		pod = pod.DeepCopy()
	}
	want := r.podStatus(rep)
	if stored != nil && stored.UID == rep.uid && equality.Semantic.DeepEqual(stored.Status, want) {
		return nil
	}
	pod.Status = want
	if err := r.c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("writing the status of pod %s: %w", rep.key, err)
	}
	r.mu.Lock()
	rep.pod.ResourceVersion = pod.ResourceVersion
	r.mu.Unlock()
	return nil
}

// writeStatus writes d's status from its replicas (those of the current
// template hash count as updated), or from perr when d cannot run.
func (r *Runner) writeStatus(ctx context.Context, d *appsv1.Deployment, reps []*replica, hash string, perr error) error {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
	for _, rep := range reps {
		st.Replicas++
		if rep.hash == hash {
			st.UpdatedReplicas++
		}
		if r.isReady(rep) {
			st.ReadyReplicas++
			st.AvailableReplicas++
		}
	}
	st.UnavailableReplicas = max(want-st.AvailableReplicas, 0)

	var conds []appsv1.DeploymentCondition
	if perr != nil {
		conds = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: ReasonUnsupported, Message: perr.Error()},
			{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: perr.Error()},
		}
	} else {
		avail := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
			Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}
		if st.AvailableReplicas < want {
			avail.Status, avail.Reason, avail.Message = corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
		}
		prog := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
			Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("Pods of template %s are available.", hash)}
		if st.UpdatedReplicas != want || st.Replicas != want || st.ReadyReplicas != want {
			prog.Reason, prog.Message = "ReplicaSetUpdated", fmt.Sprintf("Pods of template %s are progressing.", hash)
		}
		conds = []appsv1.DeploymentCondition{avail, prog}
	}
	now := metav1.Now().Rfc3339Copy()
	for i := range conds {
		c := &conds[i]
		c.LastUpdateTime, c.LastTransitionTime = now, now
		for _, o := range d.Status.Conditions {
			if o.Type != c.Type {
				continue
			}
			if o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
			if o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
				c.LastUpdateTime = o.LastUpdateTime
			}
		}
	}
	st.Conditions = conds
	if equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	next := d.DeepCopy()
	next.Status = st
	if err := r.c.Status().Update(ctx, next); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	return nil
}
