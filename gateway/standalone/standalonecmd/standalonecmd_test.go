package standalonecmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestLoggerLevels(t *testing.T) {
	var loud bytes.Buffer
	Logger(&loud, true).V(1).Info("at V(1)")
	if got := loud.String(); !strings.Contains(got, "at V(1)") {
		t.Errorf("Logger(w, true) wrote %q; want the V(1) line", got)
	}
	var quiet bytes.Buffer
	log := Logger(&quiet, false)
	log.Info("at info")
	log.V(1).Info("at V(1)")
	if got := quiet.String(); !strings.Contains(got, "at info") || strings.Contains(got, "at V(1)") {
		t.Errorf("Logger(w, false) wrote %q; want the info line and not the V(1) one", got)
	}
}

// childEnv, set to 1, makes TestLoggerIsControllerRuntimesLog check in
// the process it runs in rather than start one.
const childEnv = "STANDALONECMD_TEST_CHILD"

// childChecked is what the child prints once it has checked.
const childChecked = "standalonecmd: controller-runtime's log checked"

// TestLoggerIsControllerRuntimesLog: controller-runtime's lines go to the
// command's log, named controller-runtime. controller-runtime takes the
// first log a process gives it only, so the check runs in a process of its
// own (this test binary again), where Logger is the first to give one.
func TestLoggerIsControllerRuntimesLog(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		var w bytes.Buffer
		Logger(&w, false)
		crlog.Log.Info("from controller-runtime")
		if got := w.String(); !strings.Contains(got, "from controller-runtime") || !strings.Contains(got, "logger=controller-runtime") {
			t.Errorf("the command's log has %q; want controller-runtime's line, named controller-runtime", got)
		}
		fmt.Println(childChecked)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoggerIsControllerRuntimesLog$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(childChecked)) {
		t.Errorf("the check in a process of its own: %v; want it run and passed:\n%s", err, out)
	}
}

// kubeconfig writes a kubeconfig file naming server, with the cluster's
// CA data caData (base64), and returns its path.
func kubeconfig(t *testing.T, server, caData string) string {
	t.Helper()
	ca := ""
	if caData != "" {
		ca = "\n    certificate-authority-data: " + caData
	}
	text := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + ca + `
contexts:
- name: c
  context:
    cluster: c
    user: u
users:
- name: u
  user:
    token: t
current-context: c
`
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestClient(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	for _, tc := range []struct {
		name, path string
		code       int
		want       string // in the error; "" for none
	}{
		{"missing file", missing, ExitUsage, "--kubeconfig " + missing + ": "},
		{"no server", kubeconfig(t, "", ""), ExitUsage, "--kubeconfig "},
		{"bad CA data", kubeconfig(t, "https://127.0.0.1:1", "bm90IGEgY2VydGlmaWNhdGU="), ExitFailure, "standalone: client for https://127.0.0.1:1"},
		// No request is made: the server need not be there.
		{"good", kubeconfig(t, "https://127.0.0.1:1", ""), 0, ""},
	} {
		c, code, err := Client(tc.path)
		if tc.want == "" {
			if err != nil || code != 0 || c == nil {
				t.Errorf("%s: Client = %v, %d, %v; want a client, 0, nil", tc.name, c, code, err)
			}
			continue
		}
		if err == nil || code != tc.code || c != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Client = %v, %d, %v; want no client, %d and an error with %q", tc.name, c, code, err, tc.code, tc.want)
		}
	}
}
