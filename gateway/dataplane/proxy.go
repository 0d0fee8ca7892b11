package dataplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// newTransport returns the shared upstream transport for HTTP/1.1, or for
// cleartext HTTP/2 with prior knowledge (h2c). Compression is left alone so
// bodies pass through unchanged.
func newTransport(h2c bool) *http.Transport {
	t := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		Protocols:             new(http.Protocols),
	}
	if h2c {
		// Frames a request makes in a row leave in one write (bufconn.go).
		t.DialContext = coalescingDialer(&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second})
		t.Protocols.SetUnencryptedHTTP2(true)
	} else {
		t.Protocols.SetHTTP1(true)
	}
	return t
}

// hopHeaders are connection-level headers that a proxy does not forward
// (RFC 9110 section 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		delete(h, name)
	}
}

// upgradeType returns the protocol a request or response asks to switch to
// ("websocket"), or "".
func upgradeType(h http.Header) string {
	for _, v := range h["Connection"] {
		for token := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(token), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

// upstreamRequest derives the request sent to backends, under ctx, from the
// client's:
// same method, path, Host and body; hop-by-hop headers removed (but "te:
// trailers" and protocol upgrades kept); X-Forwarded-For and
// X-Forwarded-Proto added.
func upstreamRequest(ctx context.Context, r *http.Request) *http.Request {
	out := r.WithContext(ctx)
	out.Header = r.Header.Clone()
	if out.Header == nil {
		out.Header = make(http.Header)
	}
	u := *r.URL
	out.URL = &u
	out.RequestURI = ""
	out.Close = false
	if r.ContentLength == 0 {
		out.Body = nil
	}

	upgrade := upgradeType(r.Header)
	trailers := false
	for _, v := range r.Header["Te"] {
		if strings.Contains(strings.ToLower(v), "trailers") {
			trailers = true
		}
	}
	removeHopHeaders(out.Header)
	if trailers {
		out.Header.Set("Te", "trailers")
	}
	if upgrade != "" {
		out.Header.Set("Connection", "Upgrade")
		out.Header.Set("Upgrade", upgrade)
	}

	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := out.Header["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		out.Header.Set("X-Forwarded-For", ip)
	}
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	out.Header.Set("X-Forwarded-Proto", proto)
	return out
}

// forward performs one attempt: out goes to one endpoint of b under ctx
// (which must stay alive while the response body is read), and the response
// (or the transport error) comes back unread. It is the unit that a retry
// loop repeats and a per-try timeout bounds; such an attempt (retryAttempt)
// is one the transport must not send again by itself.
func (s *Server) forward(ctx context.Context, out *http.Request, b *backend, endpoint string, retryAttempt bool) (*http.Response, error) {
	req := out.WithContext(ctx)
	u := *out.URL
	u.Scheme, u.Host = "http", endpoint
	req.URL = &u
	if retryAttempt {
		s.parts.Transport.ForbidResend(req, b.h2c && out.Header.Get("Upgrade") == "") // parts.go
	}
	if out.Header.Get("Upgrade") != "" {
		return s.forwardUpgrade(ctx, req, endpoint) // tunnel.go
	}
	return s.parts.Transport.RoundTrip(req, b.h2c) // parts.go
}

// writeResponse relays an upstream response to pr's client: headers (with
// the response filters and CORS applied), the body flushed as it arrives
// when it is streamed, then trailers.
func (s *Server) writeResponse(pr *proxyRequest, resp *http.Response) {
	w, r, route := pr.w, pr.r, &pr.act.filters
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// A tunnel is bounded by MaxTunnels and its idle limits, not by
		// the backend's request slots.
		pr.slot.release()
		s.switchProtocols(w, r, resp)
		return
	}
	h := w.Header()
	copyResponseHeader(h, resp, route, &pr.b.filters)
	if route.cors != nil {
		route.cors.addResponseHeaders(h, pr.origin)
	}
	relay := s.parts.Relay // parts.go
	stream := relay.Framing(h, resp.ContentLength < 0)
	resp.Body = relay.Body(resp.Body)
	w.WriteHeader(resp.StatusCode)
	if stream {
		// The client learns the status before the first chunk arrives,
		// which may take as long as the backend likes.
		_ = http.NewResponseController(w).Flush()
	}
	if err := copyBody(w, resp.Body, stream); err != nil {
		if r.Context().Err() == nil {
			s.log.V(1).Info("relaying the response body failed", "error", err.Error())
		}
		// The backend failed, rather than the gateway's own timeouts or
		// the client ending the exchange.
		backendFailed := resp.Request != nil && resp.Request.Context().Err() == nil && r.Context().Err() == nil
		relay.Aborted(w, backendFailed)
		return
	}
	for k, vv := range resp.Trailer {
		h[http.TrailerPrefix+k] = vv
	}
}

// abortRelayed ends a response whose upstream failed after it started:
// what was written so far (status, headers, the body bytes received) is
// flushed to the client first, then the response is aborted, so that the
// client sees an incomplete response rather than none. Over HTTP/1.1 the
// connection then closes short of the Content-Length, or without the last
// chunk (RFC 9112 sections 6.3 and 8); over HTTP/2 the stream is reset
// after its HEADERS and DATA, never ended (RFC 9113 section 8.1). Aborting
// without the flush would drop the bytes net/http still buffers: an empty
// reply, which clients take for a stale keep-alive connection and resend.
func abortRelayed(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBody copies body to w; when stream is set, every chunk is flushed as
// soon as it arrives.
func copyBody(w http.ResponseWriter, body io.Reader, stream bool) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	flusher, _ := w.(http.Flusher)
	if !stream {
		flusher = nil
	}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// switchProtocols completes a protocol upgrade (WebSocket): the client
// connection is hijacked and becomes a tunnel to the backend's (tunnel.go),
// which passes half-closes on and ends by the Gateway's tunnel timeouts.
func (s *Server) switchProtocols(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	backConn, ok := resp.Body.(*upgradedConn)
	if !ok || upgradeType(r.Header) == "" {
		writeError(w, http.StatusBadGateway, "the backend switched protocols unasked")
		return
	}
	defer backConn.Close()
	if max := int64(s.limits.MaxTunnels); s.tunnels.Add(1) > max && max > 0 {
		s.tunnels.Add(-1)
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the gateway has %d tunnels open, the most it keeps at once", max))
		return
	}
	defer s.tunnels.Add(-1)
	t := connectionTimeouts(r.Context())
	if t.Tunnel == 0 && t.Client == 0 && t.Server == 0 {
		t.Tunnel = s.limits.TunnelIdleTimeout // limits.go
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, http.StatusBadGateway, "protocol upgrade is not possible on this connection")
		return
	}
	defer conn.Close()
	resp.Body = nil
	if err := resp.Write(brw); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	if why := tunnel(conn, brw.Reader, backConn.Conn, backConn.r, t, s.parts.Relay, s.parts.Reload); why != "" {
		s.log.V(1).Info("tunnel closed", "reason", why, "host", r.Host, "path", r.URL.Path)
	}
}

// copyResponseHeader copies resp's header, less its hop-by-hop fields,
// into h, which is to be sent to the client, and applies the route's and
// then the backend's response header filters. A response without a
// Content-Type is relayed without one: nothing sniffs its body.
func copyResponseHeader(h http.Header, resp *http.Response, route, be *filterSet) {
	removeHopHeaders(resp.Header)
	for k, vv := range resp.Header {
		h[k] = vv
	}
	for _, f := range route.responseHeaders {
		applyHeaderFilter(h, f)
	}
	for _, f := range be.responseHeaders {
		applyHeaderFilter(h, f)
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil
	}
}

// maxMirrorBody bounds the request body buffered so mirrors can replay it.
// Larger bodies, and bodies of unknown length, are not mirrored.
const maxMirrorBody = 64 << 10

// mirrorTimeout bounds one mirrored request.
const mirrorTimeout = 30 * time.Second

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// mirror sends a copy of out to the mirror's backend in the background and
// discards the answer. Mirrors are best effort: when too many are in flight,
// or the body cannot be replayed, the copy is dropped.
func (s *Server) mirror(out *http.Request, body []byte, bodyOK bool, m mirror) {
	if m.numerator < m.denominator && rand.IntN(m.denominator) >= m.numerator {
		return
	}
	if !bodyOK {
		s.log.V(1).Info("mirror skipped: the request body is too large or of unknown length", "backend", m.backend.name)
		return
	}
	endpoint := m.backend.pickEndpoint()
	if endpoint == "" {
		return
	}
	select {
	case s.mirrorSlots <- struct{}{}:
	default:
		s.log.V(1).Info("mirror dropped: too many mirrors in flight", "backend", m.backend.name)
		return
	}
	if s.ctx.Err() != nil { // closing
		<-s.mirrorSlots
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, mirrorTimeout)
	mr := out.Clone(ctx)
	mr.Body, mr.ContentLength = nil, 0
	if len(body) > 0 {
		mr.Body, mr.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	go func() {
		defer func() { cancel(); <-s.mirrorSlots }()
		resp, err := s.forward(ctx, mr, m.backend, endpoint, false)
		if err != nil {
			s.log.V(1).Info("mirrored request failed", "backend", m.backend.name, "error", err.Error())
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}()
}
