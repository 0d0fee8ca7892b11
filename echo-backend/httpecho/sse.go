package httpecho

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// eventStreamType is the media type of server-sent events (HTML Living
// Standard, section 9.2).
const eventStreamType = "text/event-stream"

// acceptsEventStream reports whether a request asks for server-sent events:
// its Accept header names text/event-stream, as an EventSource's request
// does.
func acceptsEventStream(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == eventStreamType {
				return true
			}
		}
	}
	return false
}

// eventStream turns an echo into n server-sent events, numbered 1 to n by
// their id field, whose data fields, joined, are the echo as compact JSON:
// each event is one chunk the handler flushes on its own. It returns the
// whole stream and the events, which share its bytes.
func eventStream(echo []byte, n int) (stream []byte, events [][]byte) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, echo); err != nil {
		// Not JSON (it always is): send it as one line per event all the
		// same, with its line breaks made spaces.
		compact.Reset()
		compact.Write(bytes.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, echo))
	}
	data := compact.Bytes()
	n = max(n, 1)
	ends := make([]int, n)
	for i := range n {
		stream = append(stream, "id: "...)
		stream = strconv.AppendInt(stream, int64(i+1), 10)
		stream = append(stream, "\ndata: "...)
		stream = append(stream, data[i*len(data)/n:(i+1)*len(data)/n]...)
		stream = append(stream, "\n\n"...)
		ends[i] = len(stream)
	}
	events = make([][]byte, n)
	start := 0
	for i, end := range ends {
		events[i] = stream[start:end]
		start = end
	}
	return stream, events
}
