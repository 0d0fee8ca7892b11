package h1framing

import (
	"strings"
	"testing"
)

type want struct {
	method, target string
	doubtful       bool
}

// follow feeds stream to a Follower in pieces of every size from 1 up,
// and asks for each wanted head in turn.
func follow(t *testing.T, stream string, wants ...want) {
	t.Helper()
	for size := 1; size <= len(stream); size++ {
		var f Follower
		for i := 0; i < len(stream); i += size {
			f.Feed([]byte(stream[i:min(i+size, len(stream))]))
		}
		for i, w := range wants {
			if h := f.Next(w.method, w.target); h.Doubtful != w.doubtful {
				t.Fatalf("pieces of %d bytes: head %d (%s %s): doubtful %v, want %v", size, i, w.method, w.target, h.Doubtful, w.doubtful)
			}
		}
	}
}

func TestCleanRequestsKeepTrack(t *testing.T) {
	stream := "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" +
		"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n" +
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /c HTTP/1.1\r\nHost: x\r\n\r\n" +
		// A body that looks like a head with CL and TE is a body.
		"POST /d HTTP/1.1\r\nHost: x\r\ntransfer-encoding: Chunked\r\n\r\n2E\r\nGET /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-E\r\n0\r\n\r\n" +
		"GET /e HTTP/1.1\r\nHost: x\r\n\r\n"
	follow(t, stream,
		want{"POST", "/a", false}, want{"POST", "/b", false}, want{"GET", "/c", false},
		want{"POST", "/d", false}, want{"GET", "/e", false})
}

func TestDoubtfulFraming(t *testing.T) {
	for name, fields := range map[string]string{
		"CL+TE":          "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"TE+CL":          "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"TE twice":       "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		"TE folded":      "Transfer-Encoding:\r\n chunked\r\n",
		"other folded":   "Transfer-Encoding: chunked\r\nX-A: 1\r\n\t2\r\n",
		"TE not chunked": "Transfer-Encoding: gzip, chunked\r\n",
		"CL conflicting": "Content-Length: 5\r\nContent-Length: 6\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			stream := "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n" +
				"POST /first HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n5\r\nhello\r\n0\r\n\r\n" +
				"GET /after HTTP/1.1\r\nHost: x\r\n\r\n"
			follow(t, stream, want{"GET", "/ok", false}, want{"POST", "/first", true}, want{"GET", "/after", true})
		})
	}
}

func TestLostTrackIsDoubtful(t *testing.T) {
	for name, stream := range map[string]string{
		"bad chunk size":          "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET /b HTTP/1.1\r\n\r\n",
		"chunk without its CRLF":  "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXXGET /b HTTP/1.1\r\n\r\n",
		"bare LF in a chunk line": "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
		"bare LF in a head":       "GET /a HTTP/1.1\nHost: x\n\nGET /b HTTP/1.1\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			var f Follower
			f.Feed([]byte(stream))
			if h := f.Next("GET", "/b"); !h.Doubtful {
				t.Errorf("the request after the framing was lost is not doubtful")
			}
		})
	}
}

// TestNextMustMatch: a request the Follower did not see where the server
// saw it (out of step) is doubtful, and so is every one after it.
func TestNextMustMatch(t *testing.T) {
	var f Follower
	f.Feed([]byte("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n"))
	if h := f.Next("GET", "/b"); !h.Doubtful {
		t.Error("a request out of step is not doubtful")
	}
	if h := f.Next("GET", "/b"); !h.Doubtful {
		t.Error("the request after one out of step is not doubtful")
	}
	if h := (&Follower{}).Next("GET", "/"); !h.Doubtful {
		t.Error("a request never seen is not doubtful")
	}
}

func TestHeadTooLong(t *testing.T) {
	var f Follower
	f.Feed([]byte("GET /a HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHead)))
	f.Feed([]byte("\r\n\r\n"))
	if h := f.Next("GET", "/a"); !h.Doubtful {
		t.Error("a head over MaxHead is not doubtful")
	}
}
