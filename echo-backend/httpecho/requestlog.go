package httpecho

import (
	"io"
	"net/http"
	"sync"
)

// logLines holds the buffers request log lines are built in, so a line
// costs one Write and no allocation.
var logLines = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// maxPooledLine is the largest buffer put back in logLines; a line for a
// longer request URI is built in a buffer that is then dropped.
const maxPooledLine = 4 << 10

// logRequest writes echo-basic's line for r to w in one Write:
//
//	Echoing back request made to <RequestURI> to client (<RemoteAddr>)
func logRequest(w io.Writer, r *http.Request) {
	bp := logLines.Get().(*[]byte)
	b := append((*bp)[:0], "Echoing back request made to "...)
	b = append(b, r.RequestURI...)
	b = append(b, " to client ("...)
	b = append(b, r.RemoteAddr...)
	b = append(b, ")\n"...)
	w.Write(b)
	if cap(b) <= maxPooledLine {
		*bp = b
		logLines.Put(bp)
	}
}
