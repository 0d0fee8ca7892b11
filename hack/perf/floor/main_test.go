package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServe(t *testing.T) {
	w := httptest.NewRecorder()
	serve(w, httptest.NewRequest(http.MethodGet, "/echo?x=1", nil))
	if w.Code != http.StatusOK {
		t.Errorf("status %d, want 200", w.Code)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q, want application/json", got)
	}
	if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
	var echo map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &echo); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, w.Body)
	}
	// The floor stands for an echo of about 400 bytes.
	if n := w.Body.Len(); n < 300 || n > 500 {
		t.Errorf("body of %d bytes, want 300 to 500", n)
	}
	if echo["path"] != "/echo" {
		t.Errorf("path %v, want /echo", echo["path"])
	}
}
