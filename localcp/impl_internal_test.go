package localcp

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func fakeGatewayClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := gwv1.Install(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&gwv1.GatewayClass{}).Build()
}

func gatewayClass(name string, generation, observed int64, status metav1.ConditionStatus) *gwv1.GatewayClass {
	gc := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation},
		Spec:       gwv1.GatewayClassSpec{ControllerName: "example.com/acme"},
	}
	if observed > 0 {
		gc.Status.Conditions = []metav1.Condition{{
			Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: status, ObservedGeneration: observed,
			Reason: "Testing", Message: "set by the test", LastTransitionTime: metav1.Now(),
		}}
		gc.Status.SupportedFeatures = []gwv1.SupportedFeature{{Name: "Gateway"}, {Name: "HTTPRoute"}}
	}
	return gc
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWaitClassAccepted(t *testing.T) {
	old := progressEvery
	progressEvery = 300 * time.Millisecond
	t.Cleanup(func() { progressEvery = old })
	never := make(chan struct{})

	t.Run("accepted", func(t *testing.T) {
		c := fakeGatewayClient(t, gatewayClass("acme", 1, 1, metav1.ConditionTrue))
		gc, err := waitClassAccepted(context.Background(), c, "acme", never, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(gc.Status.SupportedFeatures) != 2 {
			t.Errorf("supported features %v; want the class's two", gc.Status.SupportedFeatures)
		}
	})

	// Each of these must not count as accepted: the wait ends at the
	// deadline with what it saw, after progress lines saying so.
	for _, tc := range []struct {
		name string
		gc   *gwv1.GatewayClass
		want string
	}{
		{"no condition", gatewayClass("acme", 1, 0, ""), "no Accepted condition yet"},
		{"stale generation", gatewayClass("acme", 2, 1, metav1.ConditionTrue), "written for generation 1, the class is at 2"},
		{"refused", gatewayClass("acme", 1, 1, metav1.ConditionFalse), "Accepted=False, reason Testing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeGatewayClient(t, tc.gc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var progress syncBuffer
			_, err := waitClassAccepted(ctx, c, "acme", never, &progress)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not accepted within") {
				t.Errorf("err = %v; want one saying the class was not accepted in time, and %q", err, tc.want)
			}
			if p := progress.String(); !strings.Contains(p, "waiting for the implementation to accept GatewayClass acme (") || !strings.Contains(p, tc.want) {
				t.Errorf("progress %q; want lines saying what the wait sees (%q)", progress.String(), tc.want)
			}
		})
	}

	t.Run("missing class", func(t *testing.T) {
		c := fakeGatewayClient(t)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := waitClassAccepted(ctx, c, "acme", never, nil)
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("err = %v; want one saying the class was not found", err)
		}
	})

	t.Run("accepted later", func(t *testing.T) {
		c := fakeGatewayClient(t, gatewayClass("acme", 1, 0, ""))
		go func() {
			time.Sleep(400 * time.Millisecond) // the implementation taking its time; the wait polls
			gc := gatewayClass("acme", 1, 1, metav1.ConditionTrue)
			var cur gwv1.GatewayClass
			if err := c.Get(context.Background(), client.ObjectKey{Name: "acme"}, &cur); err != nil {
				t.Error(err)
				return
			}
			cur.Status = gc.Status
			if err := c.Status().Update(context.Background(), &cur); err != nil {
				t.Error(err)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := waitClassAccepted(ctx, c, "acme", never, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		c := fakeGatewayClient(t, gatewayClass("acme", 1, 0, ""))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		_, err := waitClassAccepted(ctx, c, "acme", never, nil)
		if err == nil || !strings.Contains(err.Error(), "was cancelled") {
			t.Errorf("err = %v; want one saying the wait was cancelled", err)
		}
	})

	t.Run("implementation exits", func(t *testing.T) {
		c := fakeGatewayClient(t, gatewayClass("acme", 1, 0, ""))
		exited := make(chan struct{})
		close(exited)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := waitClassAccepted(ctx, c, "acme", exited, nil)
		if err == nil || strings.Contains(err.Error(), "within") {
			t.Errorf("err = %v; want one saying the class was not accepted, without waiting for the deadline", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the wait took %v after the implementation exited; want it to end at once", took)
		}
	})
}

func TestCreateGatewayClass(t *testing.T) {
	ctx := context.Background()
	c := fakeGatewayClient(t)
	if err := createGatewayClass(ctx, c, "acme", "example.com/acme"); err != nil {
		t.Fatal(err)
	}
	var gc gwv1.GatewayClass
	if err := c.Get(ctx, client.ObjectKey{Name: "acme"}, &gc); err != nil {
		t.Fatal(err)
	}
	if gc.Spec.ControllerName != "example.com/acme" {
		t.Errorf("controllerName %q; want example.com/acme", gc.Spec.ControllerName)
	}
	if err := createGatewayClass(ctx, c, "acme", "example.com/acme"); err != nil {
		t.Errorf("creating it again for the same controller: %v; want no error", err)
	}
	err := createGatewayClass(ctx, c, "acme", "example.com/other")
	if err == nil || !strings.Contains(err.Error(), `exists with controllerName "example.com/acme"`) {
		t.Errorf("err = %v; want one naming the class's own controller", err)
	}
}

func TestInterrupted(t *testing.T) {
	run := func(script string) error { return exec.Command("sh", "-c", script).Run() }
	if err := run("kill -INT $$"); !interrupted(err) {
		t.Errorf("a shell ended by SIGINT: interrupted(%v) = false; want true", err)
	}
	if err := run("exit 130"); !interrupted(err) {
		t.Errorf("exit status 130: interrupted(%v) = false; want true", err)
	}
	if err := run("exit 1"); interrupted(err) {
		t.Errorf("exit status 1: interrupted(%v) = true; want false", err)
	}
	if interrupted(errors.New("not an exit")) {
		t.Error("interrupted(a plain error) = true; want false")
	}
}
