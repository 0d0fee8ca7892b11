package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// Where the upstream suite finds its base manifests when the options name
// none.
const (
	defaultBaseManifests = "base/manifests.yaml"
	defaultMeshManifests = "mesh/manifests.yaml"
)

// namespacePollInterval and namespaceProgressEvery pace
// waitForTerminatingNamespaces; tests shorten them.
var (
	namespacePollInterval  = 250 * time.Millisecond
	namespaceProgressEvery = 5 * time.Second
)

// namespaceReadTimeout bounds one read of a namespace; a read in flight
// may end that much after the wait's own timeout.
const namespaceReadTimeout = 10 * time.Second

// waitForPreviousRun waits until the namespaces of the suite's base
// manifests (and its mesh manifests) that a previous run left being deleted
// are gone, bounded by the suite's NamespacesMustBeReady timeout.
func waitForPreviousRun(ctx context.Context, co *suite.ConformanceOptions, progress io.Writer) error {
	base, mesh := cmp.Or(co.BaseManifests, defaultBaseManifests), cmp.Or(co.MeshManifests, defaultMeshManifests)
	names, err := manifestNamespaces(co.ManifestFS, base, mesh)
	if err != nil {
		return fmt.Errorf("the base manifests' namespaces: %w", err)
	}
	return waitForTerminatingNamespaces(ctx, co.Client, names, co.TimeoutConfig.NamespacesMustBeReady, progress)
}

// deleteBaseNamespaces deletes the namespaces of the suite's base
// manifests (and its mesh manifests), which hold what a run applied, in
// the background: the next run waits for them to go (waitForPreviousRun).
func deleteBaseNamespaces(ctx context.Context, co *suite.ConformanceOptions) error {
	base, mesh := cmp.Or(co.BaseManifests, defaultBaseManifests), cmp.Or(co.MeshManifests, defaultMeshManifests)
	names, err := manifestNamespaces(co.ManifestFS, base, mesh)
	if err != nil {
		return fmt.Errorf("the base manifests' namespaces: %w", err)
	}
	var errs []error
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := co.Client.Delete(ctx, ns, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// manifestNamespaces returns the names of the Namespaces the manifest
// files declare, each file read from the first of fsys that has it. A file
// none of them has is skipped: the suite reports it when it applies it.
func manifestNamespaces(fsys []fs.FS, files ...string) ([]string, error) {
	var names []string
	for _, file := range files {
		var data []byte
		for _, f := range fsys {
			b, err := fs.ReadFile(f, file)
			if err == nil {
				data = b
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("reading %s: %w", file, err)
			}
		}
		if data == nil {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
		for {
			var u unstructured.Unstructured
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", file, err)
			}
			if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" && !slices.Contains(names, u.GetName()) {
				names = append(names, u.GetName())
			}
		}
	}
	return names, nil
}

// waitForTerminatingNamespaces waits until none of the namespaces names is
// being deleted. A run deletes its namespaces as it ends, and the cluster
// takes a while to empty them: a run started meanwhile would fail to
// create its base resources there ("namespace ... is being terminated").
// It writes a line to progress when it starts waiting and every few
// seconds after, and gives up after timeout, naming the namespaces left.
func waitForTerminatingNamespaces(ctx context.Context, c client.Reader, names []string, timeout time.Duration, progress io.Writer) error {
	if len(names) == 0 {
		return nil
	}
	if progress == nil {
		progress = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var nextProgress time.Time
	tick := time.NewTicker(namespacePollInterval)
	defer tick.Stop()
	for {
		var terminating []string
		for _, name := range names {
			var ns corev1.Namespace
			// A read of its own: one bounded by ctx fails as ctx's
			// deadline nears (client-go's rate limiter refuses to wait
			// past it), which would hide what the namespaces were doing.
			readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), namespaceReadTimeout)
			err := c.Get(readCtx, client.ObjectKey{Name: name}, &ns)
			cancel()
			switch {
			case client.IgnoreNotFound(err) != nil:
				return fmt.Errorf("reading namespace %s: %w", name, err)
			case err == nil && ns.DeletionTimestamp != nil:
				terminating = append(terminating, name)
			}
		}
		if len(terminating) == 0 {
			if !nextProgress.IsZero() {
				fmt.Fprintf(progress, "namespaces of a previous run: gone after %v\n", time.Since(start).Round(100*time.Millisecond))
			}
			return nil
		}
		if t := time.Now(); t.After(nextProgress) {
			fmt.Fprintf(progress, "namespaces of a previous run are still being deleted: %s (waited %v of at most %v)\n",
				strings.Join(terminating, ", "), t.Sub(start).Round(time.Second), timeout)
			nextProgress = t.Add(namespaceProgressEvery)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespaces %s of a previous run were still being deleted after %v (the wait is bounded by the suite's namespacesMustBeReady timeout, %v): see what holds them with kubectl get namespace NAME -o yaml",
				strings.Join(terminating, ", "), time.Since(start).Round(time.Second), timeout)
		case <-tick.C:
		}
	}
}
