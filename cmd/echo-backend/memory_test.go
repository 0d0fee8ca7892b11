package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/internal/selfexec"
)

// envRunMain makes the test binary run main instead of the tests, so that
// a test can start the echo-backend as a process of its own and measure it.
const envRunMain = "GATEWITNESS_ECHO_BACKEND_TEST_MAIN"

func TestMain(m *testing.M) { selfexec.Main(m, envRunMain, main) }

// TestBigHeadersStayBounded sends 300 requests, each with its own request
// id and a header of 1,000,000 bytes, to an echo-backend process, and
// wants its resident memory to grow by less than 64 MiB. Before the ledger
// bounded bytes it kept every header whole for its TTL: 300 such requests
// took it from 26 MB to 529 MB.
func TestBigHeadersStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and sends 300 MB")
	}
	// Under -race a build without it: the race detector multiplies a
	// program's memory.
	bin := selfexec.Binary(t, "echo-backend")
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-http-port", "0", "-h2c-port=", "-tcp-port=", "-quiet")
	cmd.Env = selfexec.Env(envRunMain)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's first line: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "echo-backend: serving http on ")
	if !ok {
		t.Fatalf("first line %q does not say where http is served", line)
	}

	client := &http.Client{Timeout: 30 * time.Second}
	send := func(id string, header string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Header.Set("X-Gatewitness-Id", id)
		if header != "" {
			req.Header.Set("X-Big", header)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %s: %v", id, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %s: status %d", id, resp.StatusCode)
		}
	}
	for i := range 20 { // warm up: connections, buffers, the ledger's shards
		send(fmt.Sprint("warm-", i), "")
	}
	before := rss(t, cmd.Process.Pid)
	big := strings.Repeat("x", 1_000_000)
	for i := range 300 {
		send(fmt.Sprint("big-", i), big)
	}
	after := rss(t, cmd.Process.Pid)
	t.Logf("RSS %d MiB before, %d MiB after 300 requests with a 1 MB header (+%d MiB)", before>>20, after>>20, (after-before)>>20)
	if after-before >= 64<<20 {
		t.Errorf("RSS grew by %d MiB, want less than 64 MiB", (after-before)>>20)
	}

	// The ledger kept each attempt, its header cut and the cut said.
	resp, err := client.Get("http://" + addr + "/_gatewitness/ledger/big-299")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `bytes not kept`) {
		t.Errorf("ledger of the last request: %d %.300s; want it kept with its truncation said", resp.StatusCode, body)
	}
}

// rss reads a process's resident set size, in bytes, from /proc.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read the backend's memory: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}
