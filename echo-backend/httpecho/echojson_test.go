package httpecho

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
)

// marshalIndent is the encoding appendJSON must reproduce byte for byte.
func marshalIndent(t testing.TB, e Echo, skip func(string) bool) []byte {
	t.Helper()
	if skip != nil && e.Headers != nil {
		h := make(map[string][]string, len(e.Headers))
		for k, v := range e.Headers {
			if !skip(k) {
				h[k] = v
			}
		}
		e.Headers = h
	}
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEchoJSONMatchesEncodingJSON(t *testing.T) {
	pod := podinfo.Info{Namespace: "ns", Ingress: "ing", Service: "svc", Pod: "pod-1"}
	cases := map[string]Echo{
		"zero":       {},
		"no headers": {Path: "/", Headers: map[string][]string{}},
		"typical": {Path: "/echo?gatewitness-id=a", Host: "127.0.0.1:3000", Method: "GET", Proto: "HTTP/1.1",
			Headers:  map[string][]string{"User-Agent": {"fortio.org/fortio-1.68.2"}, "Accept": {"*/*"}, "X-Multi": {"a", "b", "c"}},
			HTTPPort: "3000", Info: pod, RequestID: "a", Attempt: 3},
		"id only":              {Path: "/", RequestID: "only"},
		"attempt only":         {Path: "/", Attempt: 2},
		"nil and empty values": {Headers: map[string][]string{"Nil": nil, "Empty": {}, "Blank": {""}}},
		"escapes": {
			Path: "/a\"b\\c<d>e&f\u2028g\u2029h\x00\x01\x1f\x7f",
			Host: "tab\there\nnew\rret\bback\fform",
			Headers: map[string][]string{
				"Bad-Utf8":   {"\xff\xfeok\xc3", "é日本\U0001F600"},
				"<html>&":    {"</script>"},
				"Lower-Case": {"z"}, "lower": {"y"}, "UPPER": {"x"},
			},
			Info: podinfo.Info{Pod: "p\"od"}, RequestID: "id\u2028<>",
		},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			want := marshalIndent(t, e, nil)
			if got := e.appendJSON(nil, nil); !bytes.Equal(got, want) {
				t.Errorf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
			}
		})
	}
}

func TestEchoJSONSkipsHelperHeaders(t *testing.T) {
	e := Echo{Path: "/", Headers: map[string][]string{
		"Accept": {"*/*"}, http.CanonicalHeaderKey(streamHeader): {"1/3"}, http.CanonicalHeaderKey(grpcTimeoutHeader): {"1S"},
	}}
	got := e.appendJSON(nil, isHelperHeader)
	if want := marshalIndent(t, e, isHelperHeader); !bytes.Equal(got, want) {
		t.Errorf("appendJSON:\n%s\nwant:\n%s", got, want)
	}
	if bytes.Contains(got, []byte("Gatewitness")) {
		t.Errorf("helper header echoed:\n%s", got)
	}
	// Only helper headers: an empty object, as for a request with none.
	e.Headers = map[string][]string{http.CanonicalHeaderKey(streamHeader): {"1/3"}}
	if got := e.appendJSON(nil, isHelperHeader); !bytes.Contains(got, []byte(`"headers": {},`)) {
		t.Errorf("want an empty headers object:\n%s", got)
	}
}

func FuzzEchoJSON(f *testing.F) {
	f.Add("/echo", "h", "GET", "X-A", "v", "id", 1)
	f.Add("\xff<\u2028>", "\x00", "", "K\"", "\\", "", 0)
	f.Fuzz(func(t *testing.T, path, host, method, key, value, id string, attempt int) {
		e := Echo{Path: path, Host: host, Method: method, Proto: "HTTP/1.1",
			Headers: map[string][]string{key: {value, path}, "Accept": {host}},
			Info:    podinfo.Info{Pod: value}, RequestID: id, Attempt: attempt}
		want := marshalIndent(t, e, nil)
		if got := e.appendJSON(nil, nil); !bytes.Equal(got, want) {
			t.Errorf("appendJSON:\n%q\nencoding/json:\n%q", got, want)
		}
	})
}
