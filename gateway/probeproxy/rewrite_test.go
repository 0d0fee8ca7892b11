package probeproxy_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/gateway/probeproxy"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestRewriteGolden from the current output")

// TestRewriteGolden rewrites every testdata/rewrite/<name>.in.yaml and
// compares the result with <name>.out.yaml, or, when <name>.err exists,
// expects an error containing its text.
func TestRewriteGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/rewrite/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict(data, &pod); err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			before := pod.DeepCopy()
			got, rerr := probeproxy.Rewrite(&pod)
			if !equalYAML(t, before, &pod) {
				t.Error("Rewrite changed its input; it must return a copy")
			}
			base := strings.TrimSuffix(in, ".in.yaml")
			if want, err := os.ReadFile(base + ".err"); err == nil {
				if rerr == nil || !strings.Contains(rerr.Error(), strings.TrimSpace(string(want))) {
					t.Fatalf("error %v, want one containing %q", rerr, strings.TrimSpace(string(want)))
				}
				return
			}
			if rerr != nil {
				t.Fatalf("Rewrite: %v", rerr)
			}
			out, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			golden := base + ".out.yaml"
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it, then check it by hand)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("Rewrite(%s) =\n%s\nwant (%s):\n%s", in, out, golden, want)
			}
		})
	}
}

func equalYAML(t *testing.T, a, b *corev1.Pod) bool {
	ya, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	yb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ya, yb)
}

func TestEnabled(t *testing.T) {
	for v, want := range map[string]bool{"enabled": true, "disabled": false} {
		got, err := probeproxy.Enabled(map[string]string{probeproxy.AnnotationInject: v})
		if err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", v, got, err, want)
		}
	}
	if got, err := probeproxy.Enabled(nil); got || err != nil {
		t.Errorf("no annotation: %v, %v; want false, nil", got, err)
	}
	_, err := probeproxy.Enabled(map[string]string{probeproxy.AnnotationInject: "yes"})
	if err == nil || !strings.Contains(err.Error(), "accepted: enabled or disabled") {
		t.Errorf("bad value: %v, want an error naming the accepted values", err)
	}
}
