package httpecho

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
)

// Echo is the JSON body of every echoed request: echo-basic's fields, with
// the same names, plus the request id and attempt number when the request
// carried an id.
type Echo struct {
	Path     string              `json:"path"` // the request URI as received
	Host     string              `json:"host"`
	Method   string              `json:"method"`
	Proto    string              `json:"proto"`
	Headers  map[string][]string `json:"headers"`
	HTTPPort string              `json:"httpPort"`

	podinfo.Info

	TLS *TLSInfo `json:"tls,omitempty"`

	RequestID string `json:"requestId,omitempty"` // from X-Gatewitness-Id or gatewitness-id
	Attempt   int    `json:"attempt,omitempty"`   // this attempt's number for RequestID
}

// TLSInfo describes the TLS connection a request came on, as echo-basic
// reports it.
type TLSInfo struct {
	Version            string   `json:"version"`
	PeerCertificates   []string `json:"peerCertificates,omitempty"` // PEM
	ServerName         string   `json:"serverName"`
	NegotiatedProtocol string   `json:"negotiatedProtocol,omitempty"`
	CipherSuite        string   `json:"cipherSuite"`
}

// tlsInfo converts a connection state; nil for a plain connection.
func tlsInfo(st *tls.ConnectionState) *TLSInfo {
	if st == nil {
		return nil
	}
	info := &TLSInfo{
		NegotiatedProtocol: st.NegotiatedProtocol,
		ServerName:         st.ServerName,
		CipherSuite:        tls.CipherSuiteName(st.CipherSuite),
	}
	// echo-basic's spelling ("TLSv1.3"), not tls.VersionName's ("TLS 1.3").
	switch st.Version {
	case tls.VersionTLS13:
		info.Version = "TLSv1.3"
	case tls.VersionTLS12:
		info.Version = "TLSv1.2"
	case tls.VersionTLS11:
		info.Version = "TLSv1.1"
	case tls.VersionTLS10:
		info.Version = "TLSv1.0"
	}
	for _, c := range st.PeerCertificates {
		info.PeerCertificates = append(info.PeerCertificates,
			string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
	}
	return info
}

// helperHeaders are the request headers the h2tap adds; they are neither
// echoed nor recorded.
var helperHeaders = []string{
	http.CanonicalHeaderKey(streamHeader),
	http.CanonicalHeaderKey(grpcTimeoutHeader),
}

// visibleHeaders returns h without the tap's helper headers, for reading
// or for ledger.Begin (which copies): h itself when it has none (every
// HTTP/1.1 request but a forged one), else a copy whose values share one
// backing array.
func visibleHeaders(h http.Header) map[string][]string {
	helpers := false
	for k := range h {
		helpers = helpers || isHelperHeader(k)
	}
	if !helpers {
		return h
	}
	n := 0
	for _, vv := range h {
		n += len(vv)
	}
	all := make([]string, n)
	out := make(map[string][]string, len(h))
	for k, vv := range h {
		if isHelperHeader(k) {
			continue
		}
		if len(vv) == 0 {
			out[k] = nil // what copying no values with append gave
			continue
		}
		m := copy(all, vv)
		out[k] = all[:m:m]
		all = all[m:]
	}
	return out
}

func isHelperHeader(k string) bool {
	for _, hh := range helperHeaders {
		if strings.EqualFold(k, hh) {
			return true
		}
	}
	return false
}

// setEchoHeaders applies X-Echo-Set-Header as echo-basic does: a
// comma-separated list of "Name:value"; repeated names are joined with ",",
// and names keep the casing given. Values are trimmed (echo-basic keeps the
// space after the colon, which HTTP/1.1 clients drop but HTTP/2 clients
// show).
func setEchoHeaders(w http.ResponseWriter, req http.Header) {
	for _, list := range req.Values(echowire.EchoSetHeader) {
		for kv := range strings.SplitSeq(list, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(kv), ":")
			if name == "" {
				continue
			}
			value = strings.TrimSpace(value)
			if len(w.Header()[name]) == 0 {
				w.Header()[name] = []string{value}
			} else {
				w.Header()[name][0] += "," + strings.TrimSpace(value)
			}
		}
	}
}

// writeJSON answers code with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(b)
}

// message is the JSON body of every error answer, as echo-basic's.
type message struct {
	Message string `json:"message"`
}

// writeError answers code with {"message": msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, message{Message: msg})
}
