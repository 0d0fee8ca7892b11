package testclient

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
)

// idSeq numbers the request ids of this process.
var idSeq atomic.Uint64

// NewID returns a request id no other request of any run shares: t's name
// (made safe for a URL path and gRPC metadata, its last 80 bytes), a
// counter and random bits.
func NewID(t testing.TB) string {
	name := []byte(t.Name())
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			name[i] = '.'
		}
	}
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s.%d.%s", name, idSeq.Add(1), hex.EncodeToString(r[:]))
}
