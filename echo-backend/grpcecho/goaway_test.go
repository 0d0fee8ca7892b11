package grpcecho_test

import (
	"strings"
	"testing"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/internal/h2test"
)

// goAwayCode makes one Unary call with the fault spec over a hand-driven
// HTTP/2 connection (grpc-go's client does not show GOAWAY codes) and
// returns the code of the GOAWAY the server sends.
func goAwayCode(t *testing.T, addr, id, spec string) http2.ErrCode {
	t.Helper()
	c := h2test.Dial(t, addr)
	c.WriteHeaders(1, false,
		":method", "POST", ":scheme", "http", ":path", echopb.Echo_Unary_FullMethodName,
		":authority", addr, "content-type", "application/grpc", "te", "trailers",
		"x-gatewitness-id", id, "x-gatewitness-fault", spec)
	// An empty EchoRequest: no compression, length 0.
	c.WriteData(1, true, make([]byte, 5))
	ga, err := c.ReadGoAway()
	if err != nil {
		t.Fatalf("%s: %v, want a GOAWAY", spec, err)
	}
	if ga.LastStreamID != 0 {
		t.Errorf("%s: GOAWAY last stream %d, want 0 (stream 1 excluded)", spec, ga.LastStreamID)
	}
	return ga.ErrCode
}

// goaway sends NO_ERROR unless reset-code names a code, INTERNAL_ERROR
// included.
func TestGoAwayCode(t *testing.T) {
	b := startBackend(t, false)
	for _, tc := range []struct {
		spec string
		want http2.ErrCode
	}{
		{"goaway", http2.ErrCodeNo},
		{"goaway;reset-code=INTERNAL_ERROR", http2.ErrCodeInternal},
		{"goaway;reset-code=ENHANCE_YOUR_CALM", http2.ErrCodeEnhanceYourCalm},
	} {
		id := strings.NewReplacer(";", "-", "=", "-").Replace(tc.spec)
		if got := goAwayCode(t, b.addr, id, tc.spec); got != tc.want {
			t.Errorf("%s: GOAWAY %v, want %v", tc.spec, got, tc.want)
		}
	}
}
