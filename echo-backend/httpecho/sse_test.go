package httpecho

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServerSentEvents(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Options{}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/sse", nil)
	req.Header.Set("Accept", "text/html, text/event-stream;q=0.9")
	req.Header.Set("X-Gatewitness-Fault", "chunks=3;interval=10ms")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	if len(events) != 3 {
		t.Fatalf("%d events, want 3: %q", len(events), body)
	}
	var data strings.Builder
	for i, ev := range events {
		id, rest, ok := strings.Cut(ev, "\n")
		if want := "id: " + string(rune('1'+i)); id != want || !ok || !strings.HasPrefix(rest, "data: ") || strings.Contains(rest, "\n") {
			t.Errorf("event %d = %q, want %q and one data line", i+1, ev, want)
		}
		data.WriteString(strings.TrimPrefix(rest, "data: "))
	}
	var e Echo
	if err := json.Unmarshal([]byte(data.String()), &e); err != nil || e.Path != "/sse" {
		t.Errorf("the events' data %q: %v, path %q; want the echo of /sse", data.String(), err, e.Path)
	}
}

func TestAcceptsEventStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream":                 true,
		"text/html, Text/Event-Stream; q=1": true,
		"application/json":                  false,
		"":                                  false,
		"text/event-streams":                false,
	} {
		h := http.Header{}
		if accept != "" {
			h.Set("Accept", accept)
		}
		if got := acceptsEventStream(h); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}
