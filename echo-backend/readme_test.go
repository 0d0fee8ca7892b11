package echobackend_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"
)

// readmeAdmin returns the part of README.md that documents the HTTP admin
// endpoints: from "### Over HTTP" to "### Over gRPC".
func readmeAdmin(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	begin, end := strings.Index(text, "### Over HTTP"), strings.Index(text, "### Over gRPC")
	if begin < 0 || end < begin {
		t.Fatal(`echo-backend/README.md: want the sections "### Over HTTP" and "### Over gRPC" of §9`)
	}
	return text[begin:end]
}

// TestREADMEAdminTableIsWhatTheBackendServes holds the README's table of
// HTTP admin requests equal to the paths the backend serves: those its 404
// for an unknown /_gatewitness/ path lists, each answering its row's
// method with something else than 404 or 405.
func TestREADMEAdminTableIsWhatTheBackendServes(t *testing.T) {
	b := start(t, map[string]string{"POD_NAME": "echo-0", "HTTP_PORT": "0", "H2C_PORT": "0", "GATEWITNESS_TCP_PORT": "0"})
	base := "http://" + b.Addr(echobackend.ListenerHTTP)
	row := regexp.MustCompile("(?m)^\\| `(GET|POST) (/_gatewitness/admin/[a-z-]+)[^`]*` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(readmeAdmin(t), -1) {
		documented = append(documented, m[2])
		req, _ := http.NewRequest(m[1], base+m[2], nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("echo-backend/README.md §9 lists %s %s, which the backend answers %d: fix the row or the route (httpecho/admin.go)", m[1], m[2], resp.StatusCode)
		}
	}
	resp, err := http.Get(base + "/_gatewitness/no-such-path")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	served := regexp.MustCompile(`/_gatewitness/admin/[a-z-]+`).FindAllString(string(body), -1)
	if len(served) == 0 {
		t.Fatalf("the 404 of an unknown /_gatewitness/ path lists no admin path: %s", body)
	}
	for _, p := range served {
		if !slices.Contains(documented, p) {
			t.Errorf("the backend serves %s, which echo-backend/README.md §9's table does not list: add its row (request and effect)", p)
		}
	}
}

// TestREADMEAdminExamplesAreWhatTheBackendAnswers replays the README's curl
// examples of the HTTP admin endpoints, in order, against a backend started
// as the README's is, and wants each JSON answer shown to be the one the
// backend gives (compared as JSON, so the README may lay it out).
func TestREADMEAdminExamplesAreWhatTheBackendAnswers(t *testing.T) {
	b := start(t, map[string]string{"POD_NAME": "echo-0", "NAMESPACE": "gatewitness-infra", "SERVICE_NAME": "echo", "HTTP_PORT": "0", "H2C_PORT": "0", "GATEWITNESS_TCP_PORT": "0"})
	base := "http://" + b.Addr(echobackend.ListenerHTTP)
	curl := regexp.MustCompile(`^\$ curl -s(i?)( -X POST)? "?http://127\.0\.0\.1:13000(/[^" ;]*)"?`)
	lines := strings.Split(readmeAdmin(t), "\n")
	replayed := 0
	for i := 0; i < len(lines); i++ {
		m := curl.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var shown []string
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "```") {
			i++
			shown = append(shown, lines[i])
		}
		method := http.MethodGet
		if m[2] != "" {
			method = http.MethodPost
		}
		want := strings.Join(shown, "\n")
		req, _ := http.NewRequest(method, base+m[3], nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			// curl's exit 56: the connection was reset (admin/refuse).
			if !strings.Contains(want, "exit 56") {
				t.Errorf("%s %s: %v; the README shows\n%s", method, m[3], err, want)
			}
			continue
		}
		if strings.Contains(want, "exit 56") {
			t.Errorf("%s %s: answered %s; the README shows a reset connection (exit 56)", method, m[3], resp.Status)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m[1] != "" || !strings.HasPrefix(strings.TrimSpace(want), "{") {
			continue // not a JSON answer: the request still counts, for the state after it
		}
		replayed++
		var gotJSON, wantJSON any
		if err := json.Unmarshal([]byte(want), &wantJSON); err != nil {
			t.Errorf("echo-backend/README.md: the answer shown for %s %s is not JSON: %v\n%s", method, m[3], err, want)
			continue
		}
		if err := json.Unmarshal(got, &gotJSON); err != nil || !reflect.DeepEqual(gotJSON, wantJSON) {
			t.Errorf("echo-backend/README.md §9: %s %s answers\n%s\nbut the README shows\n%s\nfix the example (or the backend)", method, m[3], compact(got), compact([]byte(want)))
		}
	}
	if replayed < 5 {
		t.Errorf("replayed %d JSON examples of echo-backend/README.md §9; want at least 5 (did the curl lines change form?)", replayed)
	}
}

func compact(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return fmt.Sprint(string(out))
}
