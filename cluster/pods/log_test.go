package pods_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/gatewitness/gatewitness/cluster/pods"
)

// TestLog checks that a replica's echo container logs the echo-basic line
// of every echoed request, and how Log resolves container names.
func TestLog(t *testing.T) {
	s, r := startRunner(t)
	d := deployment("default", "meshed", 1, "registry.k8s.io/gateway-api/echo-basic:v1.5.1")
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers,
		corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.22.0"})
	create(t, s, d, deployment("default", "plain", 1, "registry.k8s.io/gateway-api/echo-basic:v1.5.1"))

	var meshed, plain corev1.Pod
	for app, pod := range map[string]*corev1.Pod{"meshed": &meshed, "plain": &plain} {
		wait(t).Eventually(func() error {
			p, err := readyPods(s, "default", app)
			if err == nil && len(p) != 1 {
				err = fmt.Errorf("%d ready pods", len(p))
			}
			for _, v := range p {
				*pod = v
			}
			return err
		}).Should(gomega.Succeed(), app+" ready")
	}

	log, err := r.Log("default", meshed.Name, "meshed")
	if err != nil || log == nil {
		t.Fatalf("Log(meshed container) = %v, %v; want the echo container's log", log, err)
	}
	if got := log.Lines(time.Time{}, -1); len(got) != 0 {
		t.Fatalf("log before any request: %v", got)
	}
	before := time.Now()
	if _, err := get(http.DefaultClient, "http://"+net.JoinHostPort(meshed.Status.PodIP, "3000")+"/logged?n=1"); err != nil {
		t.Fatal(err)
	}
	got := log.Lines(time.Time{}, -1)
	if len(got) != 1 || !strings.HasPrefix(got[0].Text, "Echoing back request made to /logged?n=1 to client (127.") || got[0].Time.Before(before) {
		t.Fatalf("log after one request: %+v; want echo-basic's line, stamped after %v", got, before)
	}

	// The sidecar does not run, and has no log; the plain pod's only
	// container is the default.
	if l, err := r.Log("default", meshed.Name, "istio-proxy"); l != nil || err != nil {
		t.Errorf("Log(sidecar) = %v, %v; want nil, nil", l, err)
	}
	if l, err := r.Log("default", plain.Name, ""); err != nil || l == nil || l == log {
		t.Errorf("Log(plain, no container) = %p, %v; want the plain pod's own log", l, err)
	}

	for _, tc := range []struct {
		name, container, want string
	}{
		{meshed.Name, "", "has several containers: accepted: a container name, one of [meshed istio-proxy]"},
		{meshed.Name, "nope", `container "nope" is not valid for pod default/` + meshed.Name + ": accepted: one of [meshed istio-proxy]"},
	} {
		if l, err := r.Log("default", tc.name, tc.container); l != nil || err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, pods.ErrNoPod) {
			t.Errorf("Log(%s, %q) = %v, %v; want an error saying %q", tc.name, tc.container, l, err, tc.want)
		}
	}
	if _, err := r.Log("default", "no-such-pod", ""); !errors.Is(err, pods.ErrNoPod) {
		t.Errorf("Log(no-such-pod) error = %v, want ErrNoPod", err)
	}

	// A deleted pod's log goes with it.
	if err := s.Delete(context.Background(), &plain); err != nil {
		t.Fatal(err)
	}
	wait(t).Eventually(func() error {
		if _, err := r.Log("default", plain.Name, ""); !errors.Is(err, pods.ErrNoPod) {
			return fmt.Errorf("Log error = %v, want ErrNoPod", err)
		}
		return nil
	}).Should(gomega.Succeed(), "the deleted pod's log gone")
}
