package podlog_test

import (
	"testing"

	"github.com/gatewitness/gatewitness/cluster/podlog"
)

// BenchmarkWrite is the cost a pod's log adds to an echoed request: one
// line written by many request goroutines at once.
func BenchmarkWrite(b *testing.B) {
	line := []byte("Echoing back request made to /mirror/some/path?with=query to client (127.1.0.1:54321)\n")
	buf := podlog.New()
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			buf.Write(line)
		}
	})
}
