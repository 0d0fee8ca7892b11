// Package localcp runs a local Kubernetes control plane for tests of
// gatewitness's cluster path without Docker: etcd, kube-apiserver,
// kube-controller-manager and kwok, built from the Go module proxy (see
// hack/build.sh), started on loopback with generated certificates.
//
// kwok plays the kubelet of one fake Node: it marks Pods running and ready
// and gives them IPs from Options.PodCIDR. The control plane binds pending
// Pods to that Node itself (there is no scheduler), and for every running
// Pod whose container is the echo-backend (or upstream's echo-basic) it adds
// the Pod IP to a network namespace of its own (gatewitness-pods-<pid>,
// joined to the host by a veth pair, the Pod CIDR routed to it) and starts
// an echo-backend process in that namespace, bound to the Pod IP, with the
// container's environment. So Services, EndpointSlices (written by the
// controller manager) and Pod IPs are real, no Pod IP is an address of the
// host, and a gateway on the host reaches the backends at their Pod IPs
// through the route.
//
// Creating the namespace needs root; Start returns an error matching
// ErrNeedsRoot otherwise.
package localcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/internal/childproc"
)

// Binaries are the files Options.BinDir must hold; hack/build.sh builds
// them.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "kwok-stages.yaml", "kwok-logs-crd.yaml"}

// ErrNeedsRoot is returned (wrapped) by Start when the process is not root
// and so cannot create the network namespace Pod IPs live in.
var ErrNeedsRoot = errors.New("localcp: needs root to create the Pods' network namespace (ip netns add, a veth pair, a route for the Pod CIDR)")

// Defaults for Options fields left empty.
const (
	DefaultPodCIDR   = "10.244.0.0/24"
	DefaultNodeName  = "gatewitness-kwok-node"
	serviceCIDR      = "10.96.0.0/16"
	startTimeout     = 2 * time.Minute
	kwokNodeSelector = "kwok.x-k8s.io/node"
)

// Options configure a control plane.
type Options struct {
	// BinDir holds Binaries. Required.
	BinDir string

	// EchoBackend is the path of the echo-backend binary run for each
	// echo Pod. Required.
	EchoBackend string

	// Dir is where data, certificates, the kubeconfig and logs go. Empty
	// means a new temporary directory, removed by Close.
	Dir string

	// PodCIDR is where Pod IPs come from: an IPv4 prefix that CheckPodCIDR
	// accepts and that no other interface of the host uses. The zero
	// Prefix means DefaultPodCIDR.
	PodCIDR netip.Prefix

	// Log receives the components' output and the harness's progress; nil
	// discards. Each component's output also goes to Dir/<name>.log.
	Log io.Writer
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	dir        string
	removeDir  bool
	kubeconfig string
	cfg        *rest.Config
	log        io.Writer

	cancel context.CancelFunc
	wg     sync.WaitGroup
	procs  []*process
	podNet *podNetwork
	pods   *podRunner

	closeOnce sync.Once
	closeErr  error
}

// MissingBinaries returns the names of Binaries that dir lacks.
func MissingBinaries(dir string) []string {
	var missing []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// Start starts etcd, kube-apiserver, kube-controller-manager and kwok,
// installs gatewitness's CRDs, creates the kwok Node and starts the binder
// and the Pod runner. It returns once the API server is ready and the CRDs
// are established. ctx bounds only the start.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	if opts.BinDir == "" {
		return nil, errors.New("localcp: Options.BinDir is empty; want the directory hack/build.sh fills (make localcp-build)")
	}
	if m := MissingBinaries(opts.BinDir); len(m) > 0 {
		return nil, fmt.Errorf("localcp: %s lacks %v; run make localcp-build", opts.BinDir, m)
	}
	if opts.EchoBackend == "" {
		return nil, errors.New("localcp: Options.EchoBackend is empty; want the path of a built cmd/echo-backend")
	}
	if _, err := os.Stat(opts.EchoBackend); err != nil {
		return nil, fmt.Errorf("localcp: Options.EchoBackend: %w", err)
	}
	// ip netns exec looks a bare name up in PATH, and runs a relative
	// path from the working directory; an absolute path means this file.
	echo, err := filepath.Abs(opts.EchoBackend)
	if err != nil {
		return nil, fmt.Errorf("localcp: Options.EchoBackend: %w", err)
	}
	if !opts.PodCIDR.IsValid() {
		opts.PodCIDR = netip.MustParsePrefix(DefaultPodCIDR)
	}
	if err := CheckPodCIDR(opts.PodCIDR); err != nil {
		return nil, fmt.Errorf("localcp: Options.PodCIDR: %w", err)
	}
	if err := CheckPodCIDROnHost(opts.PodCIDR); err != nil {
		return nil, fmt.Errorf("localcp: Options.PodCIDR: %w", err)
	}
	opts.PodCIDR = opts.PodCIDR.Masked()
	if os.Geteuid() != 0 {
		return nil, ErrNeedsRoot
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}

	cp := &ControlPlane{dir: opts.Dir, log: log}
	if cp.dir == "" {
		if cp.dir, err = os.MkdirTemp("", "gatewitness-localcp-"); err != nil {
			return nil, fmt.Errorf("localcp: %w", err)
		}
		cp.removeDir = true
	} else if err := os.MkdirAll(cp.dir, 0o755); err != nil {
		return nil, fmt.Errorf("localcp: Options.Dir: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cp.cancel = cancel
	defer func() {
		if err != nil {
			_ = cp.Close()
		}
	}()

	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	p, err := writePKI(cp.dir, net.ParseIP("10.96.0.1"))
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cp.kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	if err := writeKubeconfig(cp.kubeconfig, host, p); err != nil {
		return nil, err
	}
	if cp.cfg, err = clientcmd.BuildConfigFromFlags("", cp.kubeconfig); err != nil {
		return nil, fmt.Errorf("localcp: reading back %s: %w", cp.kubeconfig, err)
	}
	cp.cfg.QPS, cp.cfg.Burst = 100, 200

	bin := func(name string) string { return filepath.Join(opts.BinDir, name) }
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	if err := cp.start("etcd", bin("etcd"),
		"--name=localcp",
		"--data-dir="+filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=localcp="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	); err != nil {
		return nil, err
	}
	if err := cp.start("kube-apiserver", bin("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(cp.dir, "apiserver-certs"),
		"--tls-cert-file="+p.ServingCert, "--tls-private-key-file="+p.ServingKey,
		"--client-ca-file="+p.CACert,
		"--service-account-key-file="+p.SAPub,
		"--service-account-signing-key-file="+p.SAKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=RBAC",
		// No kubelet mints tokens for kwok's Pods; nothing reads them.
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
	); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, cp.cfg, cp); err != nil {
		return nil, err
	}
	if err := cp.start("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig="+cp.kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kcmPort),
		"--leader-elect=false",
		"--service-account-private-key-file="+p.SAKey,
		"--root-ca-file="+p.CACert,
		"--use-service-account-credentials=false",
	); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cp.cfg)
	if err != nil {
		return nil, fmt.Errorf("localcp: clientset: %w", err)
	}
	if err := installCRDs(ctx, cp.cfg, bin("kwok-logs-crd.yaml")); err != nil {
		return nil, err
	}
	if err := cp.start("kwok", bin("kwok"),
		"--kubeconfig="+cp.kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokNodeSelector+"=fake",
		"--cidr="+opts.PodCIDR.String(),
		"--node-ip=127.0.0.1",
		// The heartbeat stage kwok-stages.yaml holds renews the Node's
		// Lease only with a lease duration; without it the controller
		// manager finds the Node not ready after 40s and marks every Pod
		// not ready, emptying the EndpointSlices.
		"--node-lease-duration-seconds=40",
		fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
		"--config="+bin("kwok-stages.yaml"),
		// The API server reaches Pod logs through the Node's kubelet
		// port, which is kwok's server.
		fmt.Sprintf("--node-port=%d", kwokPort),
		"--tls-cert-file="+p.ServingCert, "--tls-private-key-file="+p.ServingKey,
		"--enable-crds=Logs",
	); err != nil {
		return nil, err
	}

	if err := createNode(ctx, cs, DefaultNodeName, opts.PodCIDR); err != nil {
		return nil, err
	}
	if cp.podNet, err = createPodNetwork(opts.PodCIDR); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "localcp: Pod IPs (%s) in network namespace %s, routed through %s\n", opts.PodCIDR, cp.podNet.netns, cp.podNet.hostIf)
	dyn, err := dynamic.NewForConfig(cp.cfg)
	if err != nil {
		return nil, fmt.Errorf("localcp: dynamic client: %w", err)
	}
	cp.pods = newPodRunner(cs, dyn, DefaultNodeName, echo, cp.podNet, cp.dir, log)
	cp.wg.Add(2)
	go func() { defer cp.wg.Done(); cp.pods.bind(runCtx) }()
	go func() { defer cp.wg.Done(); cp.pods.run(runCtx) }()
	return cp, nil
}

// Kubeconfig returns the path of an admin kubeconfig of the API server.
func (cp *ControlPlane) Kubeconfig() string { return cp.kubeconfig }

// RestConfig returns a copy of the admin client configuration.
func (cp *ControlPlane) RestConfig() *rest.Config { return rest.CopyConfig(cp.cfg) }

// PodNetNS returns the name of the network namespace the Pod IPs and the
// echo-backend processes are in (ip netns exec NAME ...).
func (cp *ControlPlane) PodNetNS() string { return cp.podNet.netns }

// Dir returns the directory of the control plane's data and logs.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Close stops the echo-backend processes (removing their addresses), kwok,
// the controller manager, the API server and etcd, in that order, removes
// the Pods' network namespace, and removes Dir if Start created it.
func (cp *ControlPlane) Close() error {
	cp.closeOnce.Do(func() {
		cp.cancel()
		cp.wg.Wait()
		var errs []error
		if cp.pods != nil {
			errs = append(errs, cp.pods.stopAll())
		}
		for i := len(cp.procs) - 1; i >= 0; i-- {
			errs = append(errs, cp.procs[i].stop())
		}
		if cp.podNet != nil {
			errs = append(errs, cp.podNet.close())
		}
		if cp.removeDir {
			errs = append(errs, os.RemoveAll(cp.dir))
		}
		cp.closeErr = errors.Join(errs...)
	})
	return cp.closeErr
}

// process is one component of the control plane.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // the exit status, set before done is closed
	log  *os.File
}

// stopGrace is how long a component has to exit after SIGTERM.
const stopGrace = 10 * time.Second

// start runs a component with its output in Dir/<name>.log (and Log).
func (cp *ControlPlane) start(name, path string, args ...string) error {
	f, err := os.Create(filepath.Join(cp.dir, name+".log"))
	if err != nil {
		return fmt.Errorf("localcp: %s log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	w := io.MultiWriter(f, prefixWriter(cp.log, name))
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("localcp: starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), log: f}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	cp.procs = append(cp.procs, p)
	fmt.Fprintf(cp.log, "localcp: started %s (pid %d)\n", name, cmd.Process.Pid)
	return nil
}

// exited returns an error naming the first component that has exited.
func (cp *ControlPlane) exited() error {
	for _, p := range cp.procs {
		select {
		case <-p.done:
			return fmt.Errorf("localcp: %s exited (%v); see %s", p.name, p.err, p.log.Name())
		default:
		}
	}
	return nil
}

func (p *process) stop() error {
	defer p.log.Close()
	select {
	case <-p.done:
		return nil
	default:
	}
	if childproc.Stop(p.cmd.Process, false, p.done, syscall.SIGINT, stopGrace) {
		return fmt.Errorf("localcp: %s did not exit within %v of SIGINT; killed", p.name, stopGrace)
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("localcp: finding a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeKubeconfig writes an admin kubeconfig for host.
func writeKubeconfig(path, host string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["localcp"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: p.CACert}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: p.AdminCert, ClientKey: p.AdminKey}
	cfg.Contexts["localcp"] = &clientcmdapi.Context{Cluster: "localcp", AuthInfo: "admin"}
	cfg.CurrentContext = "localcp"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("localcp: writing the kubeconfig: %w", err)
	}
	return nil
}

// pollInterval is how often the start polls the API server.
const pollInterval = 100 * time.Millisecond

// waitReady polls /readyz until the API server answers ok, a component
// exits, or startTimeout passes.
func waitReady(ctx context.Context, cfg *rest.Config, cp *ControlPlane) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("localcp: clientset: %w", err)
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		if err := cp.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcp: kube-apiserver not ready within %v: %v", startTimeout, last)
		case <-tick.C:
		}
	}
}

// installCRDs creates gatewitness's CRDs (crds.Load) and those of the
// extra files, and waits until each is established.
func installCRDs(ctx context.Context, cfg *rest.Config, files ...string) error {
	list, err := crds.Load()
	if err != nil {
		return fmt.Errorf("localcp: loading the CRDs: %w", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("localcp: %w", err)
		}
		more, err := crds.Parse(data)
		if err != nil {
			return fmt.Errorf("localcp: %s: %w", f, err)
		}
		list = append(list, more...)
	}
	s := client.Options{}
	c, err := client.New(cfg, s)
	if err != nil {
		return fmt.Errorf("localcp: client: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		return fmt.Errorf("localcp: scheme: %w", err)
	}
	for _, crd := range list {
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("localcp: creating CRD %s: %w", crd.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for _, want := range list {
		for {
			var got apiextensionsv1.CustomResourceDefinition
			err := c.Get(ctx, client.ObjectKey{Name: want.Name}, &got)
			if err == nil && established(&got) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("localcp: CRD %s not established within %v (last error: %v)", want.Name, startTimeout, err)
			case <-tick.C:
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// createNode creates the Node kwok manages.
func createNode(ctx context.Context, cs kubernetes.Interface, name string, podCIDR netip.Prefix) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeSelector: "fake"},
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR.Masked().String(), PodCIDRs: []string{podCIDR.Masked().String()}},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("localcp: creating Node %s: %w", name, err)
	}
	return nil
}
