package breakage

// Reload broken: a data plane that applies configuration by reloading
// (Set.ReloadRestartsTimers).

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// restartsTimers restarts, at each configuration, the inactivity timers of
// the connections the data plane holds, as the new workers of a reloaded
// HAProxy or nginx do for connections the old ones still hold.
type restartsTimers struct {
	mu    sync.Mutex
	next  int
	hooks map[int]func()
}

// Tunnel registers restart, to be called at each configuration, and
// returns its removal.
func (h *restartsTimers) Tunnel(restart func()) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(){}
	}
	id := h.next
	h.next++
	h.hooks[id] = restart
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.hooks, id)
	}
}

// Applied calls every registered restart.
func (h *restartsTimers) Applied() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.hooks {
		f()
	}
}

// ConnState returns an http.Server ConnState hook that keeps each
// connection waiting for a request (a new one, or one idle between
// requests) registered, so that each configuration gives it the whole
// client timeout again, as a fresh worker would; nil without one.
func (h *restartsTimers) ConnState(client time.Duration) func(net.Conn, http.ConnState) {
	if client <= 0 {
		return nil
	}
	var mu sync.Mutex
	waiting := map[net.Conn]func(){}
	return func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if remove, ok := waiting[c]; ok {
			remove()
			delete(waiting, c)
		}
		if st == http.StateNew || st == http.StateIdle {
			waiting[c] = h.Tunnel(func() { _ = c.SetReadDeadline(time.Now().Add(client)) })
		}
	}
}
