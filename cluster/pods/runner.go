// Package pods is the pod runner of gatecheck's embedded cluster: it plays
// the parts of the Deployment controller, the kubelet and the EndpointSlice
// controller for Deployments of the echo-backend (or upstream echo-basic)
// image, so that the upstream conformance suite's base manifests come up
// without a cluster.
//
// For every replica of a Deployment the runner starts an echo-backend in
// this process (echobackend.Start), bound to its own loopback address
// (127.2.x.y by default: on Linux all of 127/8 is local, so no root is
// needed), with the container's environment resolved as the kubelet would
// (value with $(VAR) expansion, fieldRef, secretKeyRef, configMapKeyRef,
// envFrom) and its Secret, ConfigMap and emptyDir volumes written to a
// temporary directory; env values naming files under a mountPath are
// rewritten to those files. It writes back what a cluster would:
//
//   - a Pod per replica, named <deployment>-<pod-template-hash>-<random>,
//     with the template's labels, an ownerReference to the Deployment,
//     status.podIP, phase Running once the backend's sockets are bound
//     (Pending with a container waiting reason until then), and Ready=True
//     once they are bound if the echo container has no readiness probe, or
//     else as its readiness probe decides (package probe runs it on the
//     kubelet's schedule, with its thresholds);
//   - the Deployment's status: replicas, updatedReplicas, readyReplicas,
//     availableReplicas and the Available and Progressing conditions;
//   - EndpointSlices for every Service with a selector, labelled
//     kubernetes.io/service-name, with the target ports resolved by number or
//     by container port name, and each endpoint ready when its Pod is
//     Ready (or always, for a Service with publishNotReadyAddresses).
//
// A Deployment annotated gatecheck.dev/probe-proxy: enabled (on itself or
// on its pod template) gets the reference probe proxy of package
// probeproxy, as a mesh injector would add one: the Pod is written with its
// probes rewritten to the proxy's port and paths, and each replica runs the
// proxy on its address next to the backend, so the readiness probe reaches
// the app through it.
//
// Each replica's echo container has a log (Runner.Log): the backend's line
// per echoed request, as echo-basic prints it, kept in a bounded
// podlog.Buffer for as long as the Pod lives.
//
// Scaling starts and stops replicas; a template change rolls out new pods
// and stops the old ones once every new one serves; deleting a Deployment
// (or its namespace) stops its backends and deletes its pods.
//
// A Deployment the runner cannot run (another image, a second container
// that is not a known mesh sidecar, hostNetwork, command or args, a volume
// type other than secret, configMap or emptyDir, more replicas than
// Options.MaxReplicas) gets no pods: its status has Available=False with
// reason UnsupportedPodTemplate and a message naming each field and the
// accepted form, and the same message is logged.
//
// What the runner does not do: ReplicaSets (pods are owned by the
// Deployment directly), liveness and startup probes (they are checked and
// kept in the Pod, not run: nothing restarts a backend), exec probes (a
// Deployment with an exec readiness probe is unsupported), resource
// limits, minReadySeconds, pause, and maxSurge/maxUnavailable (a rollout
// starts every new pod at once, and the old ones go once every new one is
// ready).
package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatecheck/gatecheck/cluster/podlog"
	"github.com/gatecheck/gatecheck/cluster/probe"
	echobackend "github.com/gatecheck/gatecheck/echo-backend"
	"github.com/gatecheck/gatecheck/gateway/probeproxy"
	"github.com/gatecheck/gatecheck/internal/reconcile"
	"github.com/gatecheck/gatecheck/internal/watchloop"
)

// Defaults for Options fields left zero.
const (
	DefaultPrefix      = "127.2.0.0/16"
	DefaultMaxReplicas = 64
)

// Names the runner writes on the objects it manages.
const (
	// ManagedBy is the endpointslice.kubernetes.io/managed-by label of the
	// EndpointSlices the runner writes; it leaves other slices alone.
	ManagedBy = "pod-runner.gatecheck.dev"
	// AnnotationRunner marks the Pods the runner created.
	AnnotationRunner = "gatecheck.dev/pod-runner"
	// NodeName is the spec.nodeName of every in-process Pod.
	NodeName = "gatecheck-inprocess"
	// ReasonUnsupported is the reason of Available=False on a Deployment
	// the runner cannot run.
	ReasonUnsupported = "UnsupportedPodTemplate"
)

// Options configure a Runner.
type Options struct {
	// Client reads and watches Deployments, Services, Secrets and
	// ConfigMaps and writes Pods, EndpointSlices and Deployment status.
	Client client.WithWatch
	// Prefix is the loopback range replicas get their addresses from, as a
	// CIDR inside 127.0.0.0/8. Empty means DefaultPrefix.
	Prefix string
	// MaxReplicas bounds spec.replicas of one Deployment. Zero means
	// DefaultMaxReplicas.
	MaxReplicas int
	// Dir is where the temporary directory for volume files is made; empty
	// means os.TempDir().
	Dir string
	// Logger receives unsupported Deployments, start failures and, at V(1),
	// progress and readiness changes. The zero Logger discards.
	Logger logr.Logger
	// ProbeProxyFault breaks the probe proxy of every replica that runs
	// one, on purpose: Go tests use it to show that the probe conformance
	// tests fail against a proxy that does not forward probes. Leave it
	// probeproxy.FaultNone otherwise.
	ProbeProxyFault probeproxy.Fault
	// NoMesh ignores the probe proxy annotation, as a cluster with no mesh
	// would: every Pod keeps its probes and the kubelet probes the app
	// directly. Go tests use it to show that the probe conformance tests
	// do not pass without a mesh. Leave it false otherwise.
	NoMesh bool
}

// Runner runs the replicas of Deployments in-process. Create it with New and
// start it with Run.
type Runner struct {
	c           client.WithWatch
	log         logr.Logger
	prefix      netip.Prefix
	maxReplicas int
	parentDir   string
	proxyFault  probeproxy.Fault
	noMesh      bool
	trigger     reconcile.Trigger

	// Owned by the Run goroutine.
	dir      string
	ipUsed   map[netip.Addr]bool
	ipNext   netip.Addr
	reported map[types.UID]string // last failure logged per Deployment

	mu       sync.Mutex // guards replicas; written only by the Run goroutine
	replicas map[types.NamespacedName]*replica
}

// replica is one Pod the runner created and, once started, its backend.
type replica struct {
	key     types.NamespacedName
	uid     types.UID
	owner   types.UID // the Deployment's
	hash    string
	pod     *corev1.Pod // metadata and spec as created
	created metav1.Time

	// container is the name of the echo container, whose log is log; set
	// at creation and never changed.
	container string
	log       *podlog.Buffer

	ip      netip.Addr
	backend *echobackend.Backend
	proxy   *probeproxy.Server // the probe proxy, when the pod has one
	prober  *probe.Worker      // the readiness probe, when the pod has one
	// probeReady is the readiness probe's verdict and readyAt when the
	// replica's readiness last changed (or its backend started); both are
	// guarded by Runner.mu, since the prober's goroutine writes them.
	probeReady bool
	readyAt    metav1.Time
	started    metav1.Time // when the backend started
	why        *waiting    // why the backend is not running
}

// ready reports whether rep counts as ready: its backend runs and its
// readiness probe, if any, has passed. The caller holds r.mu.
func (rep *replica) ready() bool {
	return rep.backend != nil && (rep.prober == nil || rep.probeReady)
}

// isReady is rep.ready under r.mu.
func (r *Runner) isReady(rep *replica) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return rep.ready()
}

// New checks opts and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Client == nil {
		return nil, errors.New("pods: Options.Client is nil; it must be a client.WithWatch")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	prefix, err := netip.ParsePrefix(opts.Prefix)
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	if err != nil || !loopback.Contains(prefix.Addr()) || prefix.Bits() < 8 || prefix.Bits() > 30 {
		return nil, fmt.Errorf("pods: Options.Prefix %q: accepted: an IPv4 CIDR inside 127.0.0.0/8 of at least 4 addresses, like %q", opts.Prefix, DefaultPrefix)
	}
	if opts.MaxReplicas < 0 {
		return nil, fmt.Errorf("pods: Options.MaxReplicas %d: accepted: 0 (meaning %d) or a positive number", opts.MaxReplicas, DefaultMaxReplicas)
	}
	if opts.MaxReplicas == 0 {
		opts.MaxReplicas = DefaultMaxReplicas
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	prefix = prefix.Masked()
	r := &Runner{
		c:           opts.Client,
		log:         opts.Logger,
		prefix:      prefix,
		maxReplicas: opts.MaxReplicas,
		parentDir:   opts.Dir,
		proxyFault:  opts.ProbeProxyFault,
		noMesh:      opts.NoMesh,
		trigger:     reconcile.NewTrigger(),
		ipUsed:      map[netip.Addr]bool{},
		reported:    map[types.UID]string{},
		replicas:    map[types.NamespacedName]*replica{},
	}
	// Start at a random address of the range, so that two processes on one
	// machine rarely try the same addresses first.
	r.ipNext = prefix.Addr()
	size := uint64(1) << (32 - prefix.Bits())
	for range rand.N(size - 2) {
		r.ipNext = r.ipNext.Next()
	}
	r.ipNext = r.ipNext.Next()
	return r, nil
}

// Backend returns the running backend of the Pod namespace/name, or nil.
func (r *Runner) Backend(namespace, name string) *echobackend.Backend {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rep := r.replicas[types.NamespacedName{Namespace: namespace, Name: name}]; rep != nil {
		return rep.backend
	}
	return nil
}

// ErrNoPod is returned by Log for a Pod the runner does not run.
var ErrNoPod = errors.New("the pod runner runs no such pod")

// Log returns the log of a container of the Pod namespace/name that the
// runner runs: the echo-backend's request lines for the echo container,
// and nil for a sidecar container, which does not run in-process and so
// has no log. An empty container names the Pod's only container (init
// containers aside), as the API server's default does. It returns an error
// wrapping ErrNoPod when the runner runs no such Pod, and another error,
// naming the Pod's containers, when container is not one of them or is
// empty in a Pod of several.
func (r *Runner) Log(namespace, name, container string) (*podlog.Buffer, error) {
	r.mu.Lock()
	rep := r.replicas[types.NamespacedName{Namespace: namespace, Name: name}]
	r.mu.Unlock()
	if rep == nil {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, ErrNoPod)
	}
	var names []string
	for _, c := range rep.pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range rep.pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	switch {
	case container == "" && len(rep.pod.Spec.Containers) == 1:
		container = names[0]
	case container == "":
		return nil, fmt.Errorf("pod %s/%s has several containers: accepted: a container name, one of %v", namespace, name, names)
	case !slices.Contains(names, container):
		return nil, fmt.Errorf("container %q is not valid for pod %s/%s: accepted: one of %v", container, namespace, name, names)
	}
	if container != rep.container {
		return nil, nil
	}
	return rep.log, nil
}

// Retry delays after a failed sync or a replica that failed to start:
// doubling from the first to the last.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = 5 * time.Second
)

// Run watches the objects and brings the replicas, Pods, Deployment status
// and EndpointSlices in line after every burst of changes, until ctx is
// done. It then stops every backend, removes the volume files, waits for
// its watches to end and returns nil. Run must be called once.
func (r *Runner) Run(ctx context.Context) error {
	dir, err := os.MkdirTemp(r.parentDir, "gatecheck-pods-")
	if err != nil {
		return fmt.Errorf("pods: making the volume directory: %w", err)
	}
	r.dir = dir
	defer os.RemoveAll(dir)
	defer r.stopAll()

	var wg sync.WaitGroup
	defer wg.Wait()
	for _, newList := range watchedKinds() {
		wg.Go(func() { r.watchKind(ctx, newList) })
	}

	reconcile.Run(ctx, r.trigger, reconcile.Options{
		Pass: r.sync,
		Failed: func(err error, delay time.Duration) {
			r.log.Error(err, "pod runner sync failed; retrying", "delay", delay)
		},
		MinDelay: minRetry,
		MaxDelay: maxRetry,
	})
	return nil
}

// poke schedules a sync; pokes while one is pending coalesce.
func (r *Runner) poke() { r.trigger.Pull() }

func watchedKinds() []func() client.ObjectList {
	return []func() client.ObjectList{
		func() client.ObjectList { return &appsv1.DeploymentList{} },
		func() client.ObjectList { return &corev1.PodList{} },
		func() client.ObjectList { return &corev1.ServiceList{} },
		func() client.ObjectList { return &discoveryv1.EndpointSliceList{} },
		func() client.ObjectList { return &corev1.SecretList{} },
		func() client.ObjectList { return &corev1.ConfigMapList{} },
	}
}

// watchKind keeps a watch open on one kind until ctx is done and pokes the
// runner on every event and whenever the watch is (re)established.
func (r *Runner) watchKind(ctx context.Context, newList func() client.ObjectList) {
	watchloop.Run(ctx, r.c, newList, watchloop.Options{
		Notify: r.poke,
		Failed: func(err error, delay time.Duration) time.Duration {
			r.log.V(1).Info("watch failed; retrying", "list", fmt.Sprintf("%T", newList()), "error", err.Error())
			return delay
		},
		MinDelay: minRetry,
		MaxDelay: maxRetry,
	})
}

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

// maxBindAttempts is how many loopback addresses a replica tries when its
// ports are taken (by another process using the same range).
const maxBindAttempts = 8

// start resolves rep's environment and starts its backend on a free
// loopback address. It records why not on failure and reports whether the
// failure calls for a timed retry.
func (r *Runner) start(ctx context.Context, rep *replica, t *podTemplate) (retry bool) {
	dir := filepath.Join(r.dir, rep.key.Namespace+"_"+rep.key.Name)
	var lastErr error
	for range maxBindAttempts {
		ip, ok := r.allocIP()
		if !ok {
			lastErr = fmt.Errorf("no free loopback address left in %s", r.prefix)
			break
		}
		pod := rep.pod.DeepCopy()
		pod.Status.PodIP = ip.String()
		pod.Status.HostIP = "127.0.0.1"
		env, err := podEnv(ctx, r.c, t, pod, dir)
		var w *waiting
		if errors.As(err, &w) {
			r.releaseIP(ip)
			r.setWhy(rep, w)
			return false
		}
		if err != nil {
			r.releaseIP(ip)
			lastErr = err
			break
		}
		cfg, err := echobackend.ConfigFromEnv(func(k string) string { return env[k] })
		if err != nil {
			r.releaseIP(ip)
			lastErr = err
			break
		}
		cfg.Host = ip.String()
		cfg.Log = rep.log
		b, err := echobackend.Start(cfg)
		var proxy *probeproxy.Server
		if err == nil && t.proxy && !r.noMesh {
			proxy, err = r.startProxy(rep, ip)
			if err != nil {
				b.Close()
			}
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			// Keep the address marked: something else holds its ports.
			lastErr = err
			continue
		}
		if err != nil {
			r.releaseIP(ip)
			lastErr = err
			break
		}
		r.mu.Lock()
		rep.ip, rep.backend, rep.proxy, rep.why = ip, b, proxy, nil
		rep.started = metav1.Now().Rfc3339Copy()
		rep.readyAt = rep.started
		rep.prober = r.startProber(rep, ip)
		r.mu.Unlock()
		r.log.V(1).Info("pod serving", "pod", rep.key.String(), "ip", ip.String(), "mode", cfg.Mode.String())
		return false
	}
	r.setWhy(rep, &waiting{reasonCrashBackOff, lastErr.Error()})
	return true
}

// startProxy starts rep's probe proxy on ip, at the port Rewrite chose.
func (r *Runner) startProxy(rep *replica, ip netip.Addr) (*probeproxy.Server, error) {
	port, err := probeproxy.Port(rep.pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", rep.key, err)
	}
	return probeproxy.Listen(netip.AddrPortFrom(ip, uint16(port)).String(), probeproxy.Options{AppHost: ip.String(), Fault: r.proxyFault})
}

// startProber starts the readiness probe of rep's echo container (as
// stored: rewritten when the pod has a probe proxy), or returns nil when it
// has none. The caller holds r.mu.
func (r *Runner) startProber(rep *replica, ip netip.Addr) *probe.Worker {
	var c *corev1.Container
	for i := range rep.pod.Spec.Containers {
		if rep.pod.Spec.Containers[i].Name == rep.container {
			c = &rep.pod.Spec.Containers[i]
		}
	}
	if c == nil || c.ReadinessProbe == nil {
		return nil
	}
	return probe.Start(probe.Config{
		Probe:  c.ReadinessProbe.DeepCopy(),
		Target: probe.Target{Host: ip.String(), Ports: c.Ports},
		OnChange: func(ready bool, last probe.Result) {
			r.mu.Lock()
			rep.probeReady = ready
			rep.readyAt = metav1.Now().Rfc3339Copy()
			r.mu.Unlock()
			r.log.V(1).Info("readiness changed", "pod", rep.key.String(), "ready", ready, "probe", last.Message)
			r.poke()
		},
	})
}

func (r *Runner) setWhy(rep *replica, w *waiting) {
	if rep.why == nil || *rep.why != *w {
		r.log.Info("pod not started", "pod", rep.key.String(), "reason", w.reason, "message", w.message)
	}
	rep.why = w
}

// stop ends rep's backend and forgets it. Its Pod is deleted by the caller.
func (r *Runner) stop(rep *replica) {
	r.mu.Lock()
	delete(r.replicas, rep.key)
	b, proxy, prober := rep.backend, rep.proxy, rep.prober
	rep.backend, rep.proxy, rep.prober, rep.probeReady = nil, nil, nil, false
	r.mu.Unlock()
	// Not under r.mu: the prober's last change takes it.
	if prober != nil {
		prober.Stop()
	}
	if proxy != nil {
		if err := proxy.Close(); err != nil {
			r.log.Error(err, "stopping a probe proxy", "pod", rep.key.String())
		}
	}
	if b != nil {
		if err := b.Close(); err != nil {
			r.log.Error(err, "stopping a backend", "pod", rep.key.String())
		}
		r.releaseIP(rep.ip)
	}
	if r.dir != "" {
		os.RemoveAll(filepath.Join(r.dir, rep.key.Namespace+"_"+rep.key.Name))
	}
}

// stopAll stops every backend.
func (r *Runner) stopAll() {
	r.mu.Lock()
	reps := make([]*replica, 0, len(r.replicas))
	for _, rep := range r.replicas {
		reps = append(reps, rep)
	}
	r.mu.Unlock()
	for _, rep := range reps {
		r.stop(rep)
	}
}

func (r *Runner) deletePod(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	err := r.c.Delete(ctx, pod, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s: %w", key, err)
	}
	return nil
}

// allocIP returns a free address of the range, scanning on from the last
// one handed out and skipping the range's first and last addresses.
func (r *Runner) allocIP() (netip.Addr, bool) {
	first := r.prefix.Addr().Next()
	for range 1 << (32 - r.prefix.Bits()) {
		a := r.ipNext
		r.ipNext = r.ipNext.Next()
		if !r.prefix.Contains(r.ipNext.Next()) {
			r.ipNext = first
		}
		if !r.ipUsed[a] {
			r.ipUsed[a] = true
			return a, true
		}
	}
	return netip.Addr{}, false
}

func (r *Runner) releaseIP(a netip.Addr) { delete(r.ipUsed, a) }
