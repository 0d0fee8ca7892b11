package httpecho_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// A test sends its requests with a request id and a fault spec, then reads
// the id's ledger back from /_gatewitness/ledger/{id}: here fail=2;status=503
// answers 503 to the first two attempts and echoes the third.
func ExampleNewHandler() {
	l := ledger.New(ledger.Options{})
	defer l.Close()
	srv := httptest.NewServer(httpecho.NewHandler(httpecho.Options{Ledger: l, Listener: "http"}))
	defer srv.Close()

	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api", strings.NewReader("hello"))
		req.Header.Set("X-Gatewitness-Id", "example-1")
		req.Header.Set("X-Gatewitness-Fault", "fail=2;status=503")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		var echo httpecho.Echo
		json.NewDecoder(resp.Body).Decode(&echo)
		resp.Body.Close()
		fmt.Printf("%d requestId=%s attempt=%d\n", resp.StatusCode, echo.RequestID, echo.Attempt)
	}

	resp, err := http.Get(srv.URL + "/_gatewitness/ledger/example-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var e ledger.Entry
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range e.Attempts {
		fmt.Printf("attempt %d: %s %s status=%d fault=%q outcome=%s bodyBytes=%d\n",
			a.Number, a.Method, a.Path, a.Status, a.Fault, a.Outcome, a.BodyBytes)
	}
	// Output:
	// 503 requestId=example-1 attempt=1
	// 503 requestId=example-1 attempt=2
	// 200 requestId=example-1 attempt=3
	// attempt 1: POST /api status=503 fault="status=503" outcome=answered bodyBytes=5
	// attempt 2: POST /api status=503 fault="status=503" outcome=answered bodyBytes=5
	// attempt 3: POST /api status=200 fault="" outcome=answered bodyBytes=5
}

// A bad fault spec is answered 400 with a JSON message naming the directive
// and the accepted form.
func ExampleNewHandler_badSpec() {
	srv := httptest.NewServer(httpecho.NewHandler(httpecho.Options{Listener: "http"}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/?gatewitness-fault=delay%3Dsoon")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode)
	fmt.Print(string(body))
	// Output:
	// 400
	// {
	//  "message": "fault directive \"delay\" (value \"soon\"): not a duration; accepted: a Go duration such as 1500ms, from 0 to 5m0s"
	// }
}
