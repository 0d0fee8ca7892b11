//go:build kind

// The kind e2e test: it creates a kind cluster, installs the CRDs, the
// echo-backend image and the implementation under test, runs the whole
// suite (upstream's tests and gatewitness's) against it and writes the
// reports. It needs kind and docker; run it with
//
//	make kind-e2e GATEWAY_CLASS=... KIND_INSTALL='helm install ...'
//
// or go test -tags kind ./kind/ with the environment below.
//
//	GATEWAY_CLASS       the GatewayClass of the implementation (required)
//	SUPPORTED_FEATURES  comma-separated features it claims; empty: read from
//	                    the GatewayClass status
//	KIND_INSTALL        a shell command that installs the implementation,
//	                    run with KUBECONFIG set once the cluster is up
//	REPORT_DIR          where the reports go (default ../out/reports/kind)
//	REPORT_ORGANIZATION, REPORT_PROJECT, REPORT_URL, REPORT_VERSION,
//	REPORT_CONTACT      who the implementation is, for the report
//	GATEWITNESS_OPTIONS_FILE  a `gatewitness run` options file for the rest
//	KIND_CLUSTER        the cluster's name (default gatewitness-e2e)
//	KIND_CONFIG         the kind configuration (default cluster.yaml)
//	KIND_KEEP           when set, the cluster is left running
//	ECHO_IMAGE          the echo-backend image (default gatewitness/echo-backend:dev)
//	KIND_NODE_IMAGE     the node image (default: kind's)
//	KIND                the kind binary (default: kind on the PATH)
//	KIND_OFFLINE        when "yes" (make kind-e2e sets it for the offline node
//	                    image of make kind-image), the images are built and
//	                    loaded with no registry by make kind-images
//
// Run with go test alone, the test fills in what make kind-e2e would (see
// offlineDefaults): on a machine where make kind-image has run,
//
//	GATEWAY_CLASS=gatewitness go test -tags kind ./kind/...
//
// runs the suite on the offline node image against the reference gateway
// installed by make kind-reference (as root: it adds routes).

package kind_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"
	"sigs.k8s.io/gateway-api/conformance"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/crds"
)

var (
	testenv     env.Environment
	clusterName = getenv("KIND_CLUSTER", "gatewitness-e2e")
)

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// offlineNodeImage is the node image make kind-image builds; kindCache is
// where it keeps the kind CLI (kind/hack/build-node-image.sh).
const (
	offlineNodeImage = "gatewitness/kind-node:v1.36.3"
	kindCache        = ".cache/gatewitness/kind"
)

// offlineDefaults fills in what make kind-e2e would when the test runs
// with go test alone: the offline node image when Docker has it (with its
// cluster configuration and image build), the kind CLI make kind-image
// built when none is on the PATH, and, for GATEWAY_CLASS=gatewitness, the
// reference gateway's install.
func offlineDefaults() {
	setDefault := func(k, v string) {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	if os.Getenv("KIND_NODE_IMAGE") == "" && exec.Command("docker", "image", "inspect", offlineNodeImage).Run() == nil {
		os.Setenv("KIND_NODE_IMAGE", offlineNodeImage)
		setDefault("KIND_OFFLINE", "yes")
		setDefault("KIND_CONFIG", "cluster-offline.yaml")
	}
	if _, err := exec.LookPath("kind"); err != nil {
		if home, err := os.UserHomeDir(); err == nil {
			setDefault("KIND", filepath.Join(home, kindCache, "bin", "kind"))
		}
	}
	if os.Getenv("GATEWAY_CLASS") == "gatewitness" {
		setDefault("KIND_INSTALL", "make -C .. kind-reference KIND_CLUSTER="+clusterName+` KIND_KUBECONFIG="$KUBECONFIG"`)
	}
}

func TestMain(m *testing.M) {
	offlineDefaults()
	image := getenv("ECHO_IMAGE", "gatewitness/echo-backend:dev")
	var opts []support.ClusterOpts
	if v := os.Getenv("KIND_NODE_IMAGE"); v != "" {
		opts = append(opts, kind.WithImage(v))
	}
	if v := os.Getenv("KIND"); v != "" {
		opts = append(opts, kind.WithPath(v))
	}
	images := []env.Func{buildEchoBackend(image), envfuncs.LoadImageToCluster(clusterName, image), loadBaseImages}
	if os.Getenv("KIND_OFFLINE") == "yes" {
		images = []env.Func{makeOfflineImages(image)}
	}
	testenv = env.New()
	testenv.Setup(
		envfuncs.CreateClusterWithConfig(kind.NewProvider(), clusterName, getenv("KIND_CONFIG", "cluster.yaml"), opts...),
		installCRDs,
	)
	testenv.Setup(images...)
	testenv.Setup(installImplementation(os.Getenv("KIND_INSTALL")))
	if os.Getenv("KIND_KEEP") == "" {
		testenv.Finish(envfuncs.DestroyCluster(clusterName))
	}
	os.Exit(testenv.Run(m))
}

// installCRDs creates (or updates) the Gateway API CRDs with gatewitness's
// overlays, as crds.Load gives them, and waits for them to be served.
func installCRDs(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigFile())
	if err != nil {
		return ctx, fmt.Errorf("kubeconfig %s: %w", cfg.KubeconfigFile(), err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return ctx, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return ctx, fmt.Errorf("client: %w", err)
	}
	list, err := crds.Load()
	if err != nil {
		return ctx, err
	}
	for _, crd := range list {
		err := c.Create(ctx, crd)
		if apierrors.IsAlreadyExists(err) {
			old := &apiextensionsv1.CustomResourceDefinition{}
			if err = c.Get(ctx, client.ObjectKeyFromObject(crd), old); err == nil {
				crd.ResourceVersion = old.ResourceVersion
				err = c.Update(ctx, crd)
			}
		}
		if err != nil {
			return ctx, fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, crd := range list {
		for {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return ctx, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
			}
			if established(got) {
				break
			}
			if time.Now().After(deadline) {
				return ctx, fmt.Errorf("CRD %s is not Established after 2m", crd.Name)
			}
			select {
			case <-ctx.Done():
				return ctx, ctx.Err()
			case <-time.After(200 * time.Millisecond): // polling the API server, not synchronising goroutines
			}
		}
	}
	return ctx, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// buildEchoBackend builds the echo-backend image from the repository's
// Dockerfile.
func buildEchoBackend(image string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, run(ctx, nil, "docker", "build", "-t", image, "..")
	}
}

// makeOfflineImages builds the echo-backend image and the stand-ins for
// upstream's base images with no registry, and loads them into the nodes:
// make kind-images does it for the offline node image (kind/Makefile.kind).
func makeOfflineImages(image string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		args := []string{"-C", "..", "kind-images", "KIND_CLUSTER=" + clusterName,
			"KIND_KUBECONFIG=" + cfg.KubeconfigFile(), "KIND_NODE_IMAGE=" + os.Getenv("KIND_NODE_IMAGE"), "ECHO_IMAGE=" + image}
		if d := os.Getenv("DOCKER"); d != "" {
			args = append(args, "DOCKER="+d)
		}
		return ctx, run(ctx, nil, "make", args...)
	}
}

// loadBaseImages pulls the images of upstream's base manifests (the
// echo-basic backends the suite's Setup deploys) and loads them into the
// nodes, so the suite does not wait on registry pulls.
func loadBaseImages(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	data, err := fs.ReadFile(&conformance.Manifests, "base/manifests.yaml")
	if err != nil {
		return ctx, fmt.Errorf("upstream base manifests: %w", err)
	}
	var images []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if img, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "image:"); ok {
			images = append(images, strings.TrimSpace(img))
		}
	}
	slices.Sort(images)
	for _, img := range slices.Compact(images) {
		if err := run(ctx, nil, "docker", "pull", "-q", img); err != nil {
			return ctx, err
		}
		if ctx, err = envfuncs.LoadImageToCluster(clusterName, img)(ctx, cfg); err != nil {
			return ctx, err
		}
	}
	return ctx, nil
}

// installImplementation runs the shell command that installs the
// implementation under test, with KUBECONFIG naming the new cluster.
func installImplementation(command string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if command == "" {
			fmt.Println("kind e2e: KIND_INSTALL is empty; the implementation must already be installed")
			return ctx, nil
		}
		return ctx, run(ctx, []string{"KUBECONFIG=" + cfg.KubeconfigFile()}, "sh", "-c", command)
	}
}

// run runs a command with its output on the test's, and extra variables
// added to the environment.
func run(ctx context.Context, extraEnv []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), extraEnv...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// TestConformance runs the suite against the cluster and writes the
// reports.
func TestConformance(t *testing.T) {
	class := os.Getenv("GATEWAY_CLASS")
	if class == "" {
		t.Fatal("GATEWAY_CLASS is empty: set it to the GatewayClass of the implementation under test (e.g. eg for Envoy Gateway)")
	}
	opts := runner.DefaultOptions()
	if path := os.Getenv("GATEWITNESS_OPTIONS_FILE"); path != "" {
		if err := runner.LoadOptionsFile(path, &opts); err != nil {
			t.Fatalf("GATEWITNESS_OPTIONS_FILE: %v", err)
		}
	}
	opts.Kubeconfig = testenv.EnvConf().KubeconfigFile()
	opts.GatewayClassName = class
	for f := range strings.SplitSeq(os.Getenv("SUPPORTED_FEATURES"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			opts.SupportedFeatures = append(opts.SupportedFeatures, gwfeatures.FeatureName(f))
		}
	}
	opts.ReportDir = getenv("REPORT_DIR", "../out/reports/kind")
	impl := &opts.Implementation
	if class == "gatewitness" && os.Getenv("REPORT_ORGANIZATION") == "" {
		// The reference gateway (make kind-reference), named as the
		// in-process run names it.
		*impl = runner.ReferenceImplementation()
	}
	for key, field := range map[string]*string{
		"REPORT_ORGANIZATION": &impl.Organization, "REPORT_PROJECT": &impl.Project,
		"REPORT_URL": &impl.URL, "REPORT_VERSION": &impl.Version,
	} {
		if v := os.Getenv(key); v != "" {
			*field = v
		}
	}
	if v := os.Getenv("REPORT_CONTACT"); v != "" {
		impl.Contact = strings.Split(v, ",")
	}
	opts.Progress = os.Stdout

	var res *runner.Result
	t.Run("suite", func(t *testing.T) {
		var err error
		if res, err = runner.Run(t, opts); err != nil {
			t.Fatal(err)
		}
	})
	if res == nil {
		t.Fatal("the suite did not start")
	}
	if res.Err != nil {
		t.Errorf("writing the reports: %v", res.Err)
	}
	for _, f := range res.Files {
		t.Logf("report: %s", f)
	}
}
