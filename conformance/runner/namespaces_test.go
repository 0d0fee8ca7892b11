package runner

import (
	"bytes"
	"context"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/gateway-api/conformance"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
)

func TestManifestNamespaces(t *testing.T) {
	got, err := manifestNamespaces([]fs.FS{&conformance.Manifests, gctests.Manifests}, defaultBaseManifests, defaultMeshManifests)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gateway-conformance-infra", "gateway-conformance-app-backend", "gateway-conformance-web-backend", "gateway-conformance-mesh"} {
		if !slices.Contains(got, want) {
			t.Errorf("namespaces of the base and mesh manifests: %v; want %s among them", got, want)
		}
	}

	// The first file system that has a file wins; a file none has is
	// skipped; a file that does not parse is an error.
	first := fstest.MapFS{"m.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: one\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: two\n  namespace: one\n")}}
	second := fstest.MapFS{"m.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n")}}
	got, err = manifestNamespaces([]fs.FS{first, second}, "m.yaml", "missing.yaml")
	if err != nil || !slices.Equal(got, []string{"one"}) {
		t.Errorf("manifestNamespaces = %v, %v; want [one]", got, err)
	}
	bad := fstest.MapFS{"m.yaml": {Data: []byte("kind: [")}}
	if _, err := manifestNamespaces([]fs.FS{bad}, "m.yaml"); err == nil || !strings.Contains(err.Error(), "parsing m.yaml") {
		t.Errorf("err = %v; want one naming the file that does not parse", err)
	}
}

// lockedBuffer is a bytes.Buffer for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestWaitForTerminatingNamespaces(t *testing.T) {
	oldPoll, oldEvery := namespacePollInterval, namespaceProgressEvery
	namespacePollInterval, namespaceProgressEvery = 20*time.Millisecond, 100*time.Millisecond
	t.Cleanup(func() { namespacePollInterval, namespaceProgressEvery = oldPoll, oldEvery })

	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// A namespace being deleted: the namespace controller holds it with
	// its finalizer until its content is gone.
	terminating := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: name, Finalizers: []string{"test.gatewitness.dev/hold"}, DeletionTimestamp: &metav1.Time{Time: time.Now()},
		}}
	}
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}}
	names := []string{"held", "active", "absent"}

	t.Run("nothing to wait for", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(active).Build()
		var progress lockedBuffer
		if err := waitForTerminatingNamespaces(context.Background(), c, names, time.Minute, &progress); err != nil {
			t.Fatal(err)
		}
		if progress.String() != "" {
			t.Errorf("progress %q; want none when nothing is being deleted", progress.String())
		}
	})

	t.Run("deleted during the wait", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(active, terminating("held")).Build()
		var progress lockedBuffer
		done := make(chan error, 1)
		go func() { done <- waitForTerminatingNamespaces(context.Background(), c, names, time.Minute, &progress) }()
		// Release the namespace once the wait has said what it waits for.
		gomega.NewWithT(t).Eventually(progress.String).WithTimeout(30*time.Second).
			Should(gomega.ContainSubstring("still being deleted: held ("), "progress: a line naming the namespace being deleted")
		select {
		case err := <-done:
			t.Fatalf("the wait ended (%v) while the namespace was still being deleted", err)
		default:
		}
		var ns corev1.Namespace
		if err := c.Get(context.Background(), client.ObjectKey{Name: "held"}, &ns); err != nil {
			t.Fatal(err)
		}
		ns.Finalizers = nil
		if err := c.Update(context.Background(), &ns); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the wait did not end once the namespace was gone")
		}
		if !strings.Contains(progress.String(), "namespaces of a previous run: gone after") {
			t.Errorf("progress %q; want a last line saying the namespaces are gone", progress.String())
		}
	})

	t.Run("bounded", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(active, terminating("held")).Build()
		start := time.Now()
		err := waitForTerminatingNamespaces(context.Background(), c, names, 500*time.Millisecond, nil)
		if err == nil || !strings.Contains(err.Error(), "namespaces held of a previous run were still being deleted") {
			t.Errorf("err = %v; want one naming the namespace still being deleted", err)
		}
		if took := time.Since(start); took < 500*time.Millisecond || took > 20*time.Second {
			t.Errorf("the wait took %v; want it to give up at its 500ms timeout", took)
		}
	})
}
