package localcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gatewitness/gatewitness/internal/childproc"
	"github.com/gatewitness/gatewitness/internal/probe"
)

// echoImages are the image repositories (last path element, without tag)
// whose Pods get an echo-backend process.
var echoImages = []string{"echo-basic", "echo-backend"}

// retryInterval is how long the binder and the runner wait before watching
// again after a watch fails.
const retryInterval = 500 * time.Millisecond

// podRunner binds pending Pods to the kwok Node and runs an echo-backend
// process for each running echo Pod.
type podRunner struct {
	cs      kubernetes.Interface
	dyn     dynamic.Interface // writes kwok's Logs objects; nil writes none
	node    string
	binary  string
	podCIDR netip.Prefix
	net     *podNetwork // where Pod IPs go and echo-backends run
	dir     string
	log     io.Writer

	startMu sync.Mutex // held while a Pod's process is started or stopped

	mu     sync.Mutex
	procs  map[types.UID]*podProcess
	failed map[types.UID]*corev1.Pod // running Pods whose process could not start yet
}

// podProcess is the echo-backend of one Pod.
type podProcess struct {
	name string // namespace/name
	ip   netip.Addr
	cmd  *exec.Cmd
	done chan struct{}

	probe *probe.Worker // the readiness probe, or nil
}

func newPodRunner(cs kubernetes.Interface, dyn dynamic.Interface, node, binary string, podNet *podNetwork, dir string, log io.Writer) *podRunner {
	return &podRunner{cs: cs, dyn: dyn, node: node, binary: binary, podCIDR: podNet.podCIDR, net: podNet, dir: dir, log: log, procs: map[types.UID]*podProcess{}, failed: map[types.UID]*corev1.Pod{}}
}

// watchPods calls fn for every event of the Pods that fieldSelector
// selects (after an initial list, as synthetic Added events) until ctx
// ends, watching again after a failure.
func (r *podRunner) watchPods(ctx context.Context, fieldSelector string, fn func(watch.EventType, *corev1.Pod)) {
	for ctx.Err() == nil {
		list, err := r.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
		if err == nil {
			for i := range list.Items {
				fn(watch.Added, &list.Items[i])
			}
			var w watch.Interface
			w, err = r.cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: fieldSelector, ResourceVersion: list.ResourceVersion})
			if err == nil {
				for ev := range w.ResultChan() {
					if pod, ok := ev.Object.(*corev1.Pod); ok {
						fn(ev.Type, pod)
					}
				}
				w.Stop()
			}
		}
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(r.log, "localcp: watching pods (%s): %v\n", fieldSelector, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryInterval):
		}
	}
}

// bind binds every Pod without a node to the kwok Node: the control plane
// has no scheduler, and every Pod goes to the one Node anyway.
func (r *podRunner) bind(ctx context.Context) {
	r.watchPods(ctx, "spec.nodeName=", func(ev watch.EventType, pod *corev1.Pod) {
		if ev == watch.Deleted || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			return
		}
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: r.node},
		}
		if err := r.cs.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			fmt.Fprintf(r.log, "localcp: binding pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
		}
	})
}

// run keeps one echo-backend process per running echo Pod of the Node. A
// Pod that cannot start yet (its Secret is created after it, say) is
// retried every retryInterval until it starts or goes away.
func (r *podRunner) run(ctx context.Context) {
	retried := make(chan struct{})
	defer func() { <-retried }()
	go func() {
		defer close(retried)
		tick := time.NewTicker(retryInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.mu.Lock()
			var retry []*corev1.Pod
			for _, pod := range r.failed {
				retry = append(retry, pod)
			}
			r.mu.Unlock()
			for _, pod := range retry {
				r.sync(watch.Modified, pod)
			}
		}
	}()
	r.watchPods(ctx, "spec.nodeName="+r.node, r.sync)
}

// sync starts or stops the process of pod after event ev.
func (r *podRunner) sync(ev watch.EventType, pod *corev1.Pod) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	gone := ev == watch.Deleted || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if gone {
		r.mu.Lock()
		delete(r.failed, pod.UID)
		r.mu.Unlock()
		if err := r.stop(pod.UID); err != nil {
			fmt.Fprintf(r.log, "localcp: pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
		}
		return
	}
	if pod.Status.PodIP == "" {
		return
	}
	r.mu.Lock()
	_, running := r.procs[pod.UID]
	prev, failedBefore := r.failed[pod.UID]
	r.mu.Unlock()
	if running {
		return
	}
	err := r.startPod(pod)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failed, pod.UID)
		return
	}
	if !failedBefore || prev.ResourceVersion != pod.ResourceVersion {
		fmt.Fprintf(r.log, "localcp: pod %s/%s: %v (retrying)\n", pod.Namespace, pod.Name, err)
	}
	r.failed[pod.UID] = pod
}

// startPod adds the Pod IP to the Pods' network namespace and starts the
// Pod's echo-backend there.
func (r *podRunner) startPod(pod *corev1.Pod) error {
	ct := echoContainer(pod)
	if ct == nil {
		return nil // not an echo Pod: kwok reports it running, nothing serves it
	}
	if len(ct.Command) > 0 || len(ct.Args) > 0 {
		return fmt.Errorf("container %s sets command or args; the echo-backend takes its settings from the environment only", ct.Name)
	}
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !r.podCIDR.Contains(ip) {
		return fmt.Errorf("pod IP %q is not in the Pod CIDR %s; not adding it to the Pods' network namespace", pod.Status.PodIP, r.podCIDR)
	}
	env, err := containerEnv(pod, ct)
	if err != nil {
		return err
	}
	mounts, err := r.writeVolumes(pod, ct)
	if err != nil {
		return err
	}
	for i, kv := range env {
		env[i] = rewriteMountPath(kv, mounts)
	}
	if err := r.net.addIP(ip); err != nil {
		return err
	}
	name := pod.Namespace + "/" + pod.Name
	f, err := os.Create(filepath.Join(r.dir, "pod-"+pod.Namespace+"-"+pod.Name+".log"))
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	cmd := r.net.command(r.binary, "-host", ip.String())
	cmd.Env = env
	// The log is in the CRI format kwok's log server reads.
	cmd.Stdout, cmd.Stderr = criWriter(f, "stdout"), io.MultiWriter(criWriter(f, "stderr"), prefixWriter(r.log, name))
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", r.binary, err)
	}
	p := &podProcess{name: name, ip: ip, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	if rp := ct.ReadinessProbe; rp != nil {
		if err := probe.Validate("readinessProbe", rp); err != nil {
			fmt.Fprintf(r.log, "localcp: pod %s: %v; readiness left to kwok\n", name, err)
		} else {
			// kwok marked the Pod ready; a kubelet would not until the
			// probe passes.
			r.setReady(pod.Namespace, pod.Name, pod.UID, false, "readiness probe not yet run")
			ns, podName, uid := pod.Namespace, pod.Name, pod.UID
			p.probe = probe.Start(probe.Config{
				Probe:  rp,
				Target: probe.Target{Host: ip.String(), Ports: ct.Ports},
				OnChange: func(ready bool, last probe.Result) {
					r.setReady(ns, podName, uid, ready, last.Message)
				},
			})
		}
	}
	if err := r.createLogs(pod, ct.Name, f.Name()); err != nil {
		fmt.Fprintf(r.log, "localcp: pod %s: %v; its logs cannot be read through the API\n", name, err)
	}
	r.mu.Lock()
	r.procs[pod.UID] = p
	r.mu.Unlock()
	fmt.Fprintf(r.log, "localcp: pod %s: echo-backend on %s in network namespace %s (pid %d)\n", name, ip, r.net.netns, cmd.Process.Pid)
	return nil
}

// stop ends the process of the Pod uid, if any, and removes its address.
func (r *podRunner) stop(uid types.UID) error {
	r.mu.Lock()
	p := r.procs[uid]
	delete(r.procs, uid)
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	if p.probe != nil {
		p.probe.Stop()
	}
	var err error
	if childproc.Stop(p.cmd.Process, false, p.done, syscall.SIGINT, stopGrace) {
		err = fmt.Errorf("localcp: echo-backend of %s did not exit within %v of SIGINT; killed", p.name, stopGrace)
	}
	if e := r.net.delIP(p.ip); e != nil {
		err = errors.Join(err, e)
	}
	return err
}

// setReady writes the Pod's Ready and ContainersReady conditions and its
// containers' ready flags, as a kubelet does after a readiness probe
// changes its mind. A Pod that is gone or replaced (another uid) is left
// alone.
func (r *podRunner) setReady(ns, name string, uid types.UID, ready bool, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := r.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pod.UID != uid {
			return err
		}
		now := metav1.Now()
		for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			found := false
			for i := range pod.Status.Conditions {
				c := &pod.Status.Conditions[i]
				if c.Type == t {
					found = true
					if c.Status != status {
						c.Status, c.LastTransitionTime, c.Message = status, now, msg
					}
				}
			}
			if !found {
				pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: status, LastTransitionTime: now, Message: msg})
			}
		}
		for i := range pod.Status.ContainerStatuses {
			pod.Status.ContainerStatuses[i].Ready = ready
		}
		_, err = r.cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(r.log, "localcp: pod %s/%s: setting Ready=%v: %v\n", ns, name, ready, err)
	}
}

// logsResource is kwok's Logs kind: where kwok's server reads a Pod's
// container logs from.
var logsResource = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// createLogs points kwok at file for the logs of the Pod's container. The
// Logs object is owned by the Pod, so it goes with it.
func (r *podRunner) createLogs(pod *corev1.Pod, container, file string) error {
	if r.dyn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Logs",
		"metadata": map[string]any{
			"name":      pod.Name,
			"namespace": pod.Namespace,
			"ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "Pod", "name": pod.Name, "uid": string(pod.UID),
			}},
		},
		"spec": map[string]any{
			"logs": []any{map[string]any{"containers": []any{container}, "logsFile": file, "follow": true}},
		},
	}}
	_, err := r.dyn.Resource(logsResource).Namespace(pod.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kwok Logs: %w", err)
	}
	return nil
}

// criWriter returns a writer that writes each line to w in the CRI log
// format ("<RFC 3339 time> <stream> F <line>"), one Write per line.
func criWriter(w io.Writer, stream string) io.Writer {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			fmt.Fprintf(w, "%s %s F %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return pw
}

// stopAll stops every Pod process.
func (r *podRunner) stopAll() error {
	r.mu.Lock()
	var uids []types.UID
	for uid := range r.procs {
		uids = append(uids, uid)
	}
	r.mu.Unlock()
	var errs []error
	for _, uid := range uids {
		errs = append(errs, r.stop(uid))
	}
	return errors.Join(errs...)
}

// volumeMount maps a container's mountPath to the local directory that
// holds the volume's files.
type volumeMount struct{ path, local string }

// writeVolumes writes the files of the Secret and ConfigMap volumes ct
// mounts under the control plane's directory (the process runs on the
// host, with no mount namespace) and returns where each went.
func (r *podRunner) writeVolumes(pod *corev1.Pod, ct *corev1.Container) ([]volumeMount, error) {
	volumes := map[string]*corev1.Volume{}
	for i := range pod.Spec.Volumes {
		volumes[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mounts []volumeMount
	for _, vm := range ct.VolumeMounts {
		v := volumes[vm.Name]
		if v == nil {
			return nil, fmt.Errorf("volumeMount %s: no volume of that name", vm.Name)
		}
		data := map[string][]byte{}
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			s, err := r.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: secret %s: %w", vm.Name, v.Secret.SecretName, err)
			}
			data, items = s.Data, v.Secret.Items
		case v.ConfigMap != nil:
			cm, err := r.cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: configmap %s: %w", vm.Name, v.ConfigMap.Name, err)
			}
			for k, val := range cm.Data {
				data[k] = []byte(val)
			}
			items = v.ConfigMap.Items
		case v.EmptyDir != nil:
		default:
			return nil, fmt.Errorf("volume %s: only secret, configMap and emptyDir volumes are supported", vm.Name)
		}
		files := map[string][]byte{}
		if len(items) == 0 {
			files = data
		}
		for _, it := range items {
			files[it.Path] = data[it.Key]
		}
		local := filepath.Join(r.dir, "volumes", string(pod.UID), vm.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			return nil, fmt.Errorf("volume %s: %w", vm.Name, err)
		}
		for name, val := range files {
			clean := filepath.Clean(name)
			if !filepath.IsLocal(clean) {
				return nil, fmt.Errorf("volume %s: item path %q: want a relative path inside the volume", vm.Name, name)
			}
			f := filepath.Join(local, clean)
			if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
				return nil, fmt.Errorf("volume %s: %w", vm.Name, err)
			}
			if err := os.WriteFile(f, val, 0o600); err != nil {
				return nil, fmt.Errorf("volume %s: %w", vm.Name, err)
			}
		}
		mounts = append(mounts, volumeMount{path: strings.TrimSuffix(vm.MountPath, "/"), local: local})
	}
	return mounts, nil
}

// rewriteMountPath rewrites the value of an env entry "K=V" that names a
// path under a mount to the same path in the mount's local directory.
func rewriteMountPath(kv string, mounts []volumeMount) string {
	k, v, _ := strings.Cut(kv, "=")
	best := -1
	for i, m := range mounts {
		if (v == m.path || strings.HasPrefix(v, m.path+"/")) && (best < 0 || len(m.path) > len(mounts[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return kv
	}
	return k + "=" + mounts[best].local + strings.TrimPrefix(v, mounts[best].path)
}

// echoContainer returns the Pod's first container whose image is an echo
// backend, or nil.
func echoContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		ct := &pod.Spec.Containers[i]
		repo := ct.Image
		if j := strings.IndexByte(repo, '@'); j >= 0 {
			repo = repo[:j]
		}
		repo = path.Base(repo)
		if j := strings.IndexByte(repo, ':'); j >= 0 {
			repo = repo[:j]
		}
		for _, img := range echoImages {
			if repo == img {
				return ct
			}
		}
	}
	return nil
}

// containerEnv resolves ct's environment (literal values with $(VAR)
// references to earlier variables, and the Pod fieldRefs a Pod's own
// identity needs) as os/exec wants it. Other sources are an error naming
// the variable.
func containerEnv(pod *corev1.Pod, ct *corev1.Container) ([]string, error) {
	vars := map[string]string{}
	var env []string
	for _, e := range ct.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = os.Expand(strings.NewReplacer("$(", "${", ")", "}").Replace(v), func(k string) string { return vars[k] })
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = pod.Name
			case "metadata.namespace":
				v = pod.Namespace
			case "metadata.uid":
				v = string(pod.UID)
			case "spec.nodeName":
				v = pod.Spec.NodeName
			case "spec.serviceAccountName":
				v = pod.Spec.ServiceAccountName
			case "status.podIP":
				v = pod.Status.PodIP
			case "status.hostIP":
				v = pod.Status.HostIP
			default:
				return nil, fmt.Errorf("env %s: fieldRef %q is not supported; accepted: metadata.name, metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		default:
			return nil, fmt.Errorf("env %s: only value and fieldRef are supported", e.Name)
		}
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

// prefixWriter returns a writer that copies each line to w with "name: "
// before it. Lines are written whole, one Write each.
func prefixWriter(w io.Writer, name string) io.Writer {
	if w == io.Discard {
		return io.Discard
	}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			fmt.Fprintf(w, "%s: %s\n", name, sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return pw
}
