// Package pods is the pod runner of gatewitness's embedded cluster: it plays
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
// A Deployment annotated gatewitness.dev/probe-proxy: enabled (on itself or
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
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/cluster/podlog"
	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/internal/reconcile"
	"github.com/gatewitness/gatewitness/internal/watchloop"
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
	ManagedBy = "pod-runner.gatewitness.dev"
	// AnnotationRunner marks the Pods the runner created.
	AnnotationRunner = "gatewitness.dev/pod-runner"
	// NodeName is the spec.nodeName of every in-process Pod.
	NodeName = "gatewitness-inprocess"
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
	// ListenProbeProxy starts each proxied Pod's probe proxy. Nil means
	// probeproxy.Listen; conformance/runner/runnertest passes a broken one
	// (probeproxytest.Listen) through cluster.Gateway.
	ListenProbeProxy func(addr string, opts probeproxy.Options) (*probeproxy.Server, error)
	// NoMesh runs the Pods as a cluster with no mesh would: the probe proxy
	// annotation is ignored, every Pod keeps its probes and the kubelet
	// probes the app directly.
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
	// From Options: how probe proxies start, and whether there is a mesh.
	listenProxy func(addr string, opts probeproxy.Options) (*probeproxy.Server, error)
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
	if opts.ListenProbeProxy == nil {
		opts.ListenProbeProxy = probeproxy.Listen
	}
	prefix = prefix.Masked()
	r := &Runner{
		c:           opts.Client,
		log:         opts.Logger,
		prefix:      prefix,
		maxReplicas: opts.MaxReplicas,
		parentDir:   opts.Dir,
		listenProxy: opts.ListenProbeProxy,
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
	dir, err := os.MkdirTemp(r.parentDir, "gatewitness-pods-")
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
