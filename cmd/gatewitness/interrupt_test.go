package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/internal/selfexec"
	"github.com/gatewitness/gatewitness/reports"
)

// envRunMain makes the test binary run main instead of the tests, so that
// a test can run the gatewitness command as a process of its own.
const envRunMain = "GATEWITNESS_TEST_MAIN"

func TestMain(m *testing.M) { selfexec.Main(m, envRunMain, main) }

// gatewitnessBinary returns a gatewitness command to run as a process,
// with selfexec.Env(envRunMain).
func gatewitnessBinary(t *testing.T) string { return selfexec.Binary(t, "gatewitness") }

// TestRunInterrupted runs `gatewitness run --in-process` into a report
// folder that holds a previous run's record, waits until the run's
// incomplete record shows a test running, and stops the run: SIGINT and
// SIGTERM must end it within seconds with 128 plus the signal's number and
// a record marked interrupted in which no test failed and the test cut
// short is interrupted; kill -9 must leave the incomplete record beside
// the previous run's run.json, untouched.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in-process three times")
	}
	bin := gatewitnessBinary(t)
	previous, err := os.ReadFile("../../reports/testdata/golden-run.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		want int
	}{{"SIGINT", syscall.SIGINT, 130}, {"SIGTERM", syscall.SIGTERM, 143}, {"SIGKILL", syscall.SIGKILL, -1}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, reports.RunFileName), previous, 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			cmd := exec.Command(bin, "run", "--in-process", "--report-dir", dir)
			// A run killed outright cannot remove what it made under
			// $TMPDIR (the pods' volume directories); the test's own
			// directory is removed when it ends.
			cmd.Env = append(selfexec.Env(envRunMain), "TMPDIR="+t.TempDir())
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			running := waitForRunningTest(t, filepath.Join(dir, reports.IncompleteRunFileName), exited, &out)
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("still running 10s after %v (a test was running: %s); its output:\n%s", tc.sig, running, out.String())
			}
			t.Logf("%v sent while %s ran: exited after %v with status %d", tc.sig, running, time.Since(sent).Round(time.Millisecond), cmd.ProcessState.ExitCode())
			if tc.sig == syscall.SIGKILL {
				checkKilled(t, dir, previous)
				return
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("exit status %d, want %d; output:\n%s", got, tc.want, out.String())
			}
			checkInterrupted(t, dir, tc.name, running)
		})
	}
}

// waitForRunningTest polls the incomplete record at path until it shows a
// test running, and returns its name.
func waitForRunningTest(t *testing.T, path string, exited chan error, out *bytes.Buffer) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before a test was seen running; its output:\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		run, err := reports.ReadRunJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the incomplete record: %v", err)
		}
		if run.Status != reports.RunIncomplete {
			t.Fatalf("the incomplete record's status is %q, want %q", run.Status, reports.RunIncomplete)
		}
		for _, tr := range run.Tests {
			if tr.Result == reports.Interrupted && !tr.Started.IsZero() {
				return tr.ShortName
			}
		}
	}
	t.Fatalf("no test was seen running in %s", path)
	return ""
}

func checkInterrupted(t *testing.T, dir, signal, running string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, reports.RunFileName))
	if err != nil {
		t.Fatal(err)
	}
	run, err := reports.ReadRunJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != reports.RunInterrupted || run.Interruption == nil || run.Interruption.Signal != signal {
		t.Errorf("run.json: status %q, interruption %+v; want %q by %s", run.Status, run.Interruption, reports.RunInterrupted, signal)
	}
	if _, failed, _ := run.Counts(); failed != 0 {
		t.Errorf("run.json: %d tests failed, want 0: an interruption is no test's failure", failed)
	}
	cut := 0
	for _, tr := range run.Tests {
		if tr.Result == reports.Interrupted && strings.HasPrefix(tr.Message, "cut short after") {
			cut++
		}
		if tr.ShortName == running && tr.Result != reports.Interrupted && tr.Result != reports.Pass && tr.Result != reports.Skip {
			t.Errorf("run.json: %s, running when the signal came, is %s", running, tr.Result)
		}
	}
	if cut == 0 {
		t.Errorf("run.json: no test is interrupted as cut short, though %s was running", running)
	}
	if run.Conformance != nil || len(run.GatewitnessProfiles) > 0 {
		t.Error("run.json: an interrupted run has profile results")
	}
	if _, err := os.Stat(filepath.Join(dir, reports.UpstreamDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the upstream report of an interrupted run was written (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.IncompleteRunFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the incomplete record is still there once the interrupted run is recorded (%v)", err)
	}
	for file, want := range map[string]string{reports.JUnitFileName: `type="interrupted"`, reports.MarkdownFileName: "INTERRUPTED"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s does not say the run was interrupted (%s)", file, want)
		}
	}
	t.Logf("run.json: %d tests, %d interrupted (%d cut short), %d failed", len(run.Tests), run.InterruptedCount(), cut, 0)
}

func checkKilled(t *testing.T, dir string, previous []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, reports.RunFileName))
	if err != nil || !bytes.Equal(got, previous) {
		t.Errorf("the previous run's run.json was not left as it was (%v)", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, reports.IncompleteRunFileName))
	if err != nil {
		t.Fatalf("kill -9 left no incomplete record: %v", err)
	}
	run, err := reports.ReadRunJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != reports.RunIncomplete {
		t.Errorf("the record kill -9 left has status %q, want %q", run.Status, reports.RunIncomplete)
	}
	var done int
	for _, tr := range run.Tests {
		if tr.Result != reports.Interrupted {
			done++
		}
	}
	t.Logf("the incomplete record: %d tests, %d with a result, %d not finished", len(run.Tests), done, run.InterruptedCount())
}
