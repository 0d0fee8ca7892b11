package ledger_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// A backend records each attempt of a request id with Begin, its progress
// through the Handle, and a test reads the id back with Get. The clock is
// fixed here so the output is stable; the JSON is what
// GET /_gatewitness/ledger/{id} answers.
func ExampleLedger_Get() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := ledger.New(ledger.Options{Now: func() time.Time { return now }})
	defer l.Close()

	// Attempt 1: the backend resets it after 100ms.
	h := l.Begin("req-1", ledger.Attempt{Listener: "h2c", Protocol: "HTTP/2.0", Method: "GET", Path: "/",
		Headers: map[string][]string{"X-Gatewitness-Id": {"req-1"}}})
	h.Update(func(a *ledger.Attempt) { a.Fault = "delay=100ms;reset=before-headers" })
	h.End(ledger.Reset, now.Add(100*time.Millisecond))

	// Attempt 2, the proxy's retry 250ms later, is answered.
	now = now.Add(250 * time.Millisecond)
	h = l.Begin("req-1", ledger.Attempt{Listener: "h2c", Protocol: "HTTP/2.0", Method: "GET", Path: "/"})
	h.HeadersSent(time.Time{}) // zero: the ledger's clock
	h.Update(func(a *ledger.Attempt) { a.Status = 200 })
	h.End(ledger.Answered, time.Time{})

	e, ok := l.Get("req-1")
	if !ok {
		fmt.Println("req-1 not found")
		return
	}
	first, second := e.Attempts[0], e.Attempts[1]
	fmt.Printf("attempts=%d gap=%v\n", len(e.Attempts), second.Arrived.Sub(first.Arrived))

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.Encode(e)
	// Output:
	// attempts=2 gap=250ms
	// {
	//  "id": "req-1",
	//  "attempts": [
	//   {
	//    "attempt": 1,
	//    "arrived": "2026-01-02T03:04:05Z",
	//    "ended": "2026-01-02T03:04:05.1Z",
	//    "outcome": "reset",
	//    "listener": "h2c",
	//    "protocol": "HTTP/2.0",
	//    "conn": "",
	//    "connRequest": 0,
	//    "method": "GET",
	//    "path": "/",
	//    "headers": {
	//     "X-Gatewitness-Id": [
	//      "req-1"
	//     ]
	//    },
	//    "fault": "delay=100ms;reset=before-headers",
	//    "bodyBytes": 0
	//   },
	//   {
	//    "attempt": 2,
	//    "arrived": "2026-01-02T03:04:05.25Z",
	//    "headersSent": "2026-01-02T03:04:05.25Z",
	//    "ended": "2026-01-02T03:04:05.25Z",
	//    "outcome": "answered",
	//    "listener": "h2c",
	//    "protocol": "HTTP/2.0",
	//    "conn": "",
	//    "connRequest": 0,
	//    "method": "GET",
	//    "path": "/",
	//    "headers": null,
	//    "status": 200,
	//    "bodyBytes": 0
	//   }
	//  ],
	//  "dropped": 0
	// }
}

// MaxAttempts bounds what one id stores; later attempts still get their
// numbers and are counted in Dropped.
func ExampleOptions_maxAttempts() {
	l := ledger.New(ledger.Options{MaxAttempts: 2})
	defer l.Close()
	var numbers []int
	for range 5 {
		h := l.Begin("busy", ledger.Attempt{})
		numbers = append(numbers, h.Number())
		h.End(ledger.Answered, time.Time{})
	}
	e, _ := l.Get("busy")
	fmt.Printf("numbers=%v stored=%d dropped=%d\n", numbers, len(e.Attempts), e.Dropped)
	// Output:
	// numbers=[1 2 3 4 5] stored=2 dropped=3
}
