package fault_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/gatewitness/gatewitness/echo-backend/fault"
)

// A spec with fail=N applies its directives to the first N attempts of a
// request id; later attempts answer normally.
func ExampleParse() {
	spec, err := fault.Parse("fail=2;status=503;delay=100ms", fault.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for attempt := 1; attempt <= 3; attempt++ {
		a := spec.For(attempt)
		fmt.Printf("attempt %d: faulted=%t %q\n", attempt, a.Faulted(), a.String())
	}
	// Output:
	// attempt 1: faulted=true "delay=100ms;status=503"
	// attempt 2: faulted=true "delay=100ms;status=503"
	// attempt 3: faulted=false ""
}

// A script gives each attempt its own action. Directives outside script=
// apply to every scripted attempt unless an atom replaces them; attempts
// past the end of the script answer normally.
func ExampleParse_script() {
	spec, err := fault.Parse("trailer=x-backend:b1;script=delay:2s+503|reset|ok|UNAVAILABLE", fault.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for attempt := 1; attempt <= 5; attempt++ {
		fmt.Printf("attempt %d: %q\n", attempt, spec.For(attempt).String())
	}
	// Output:
	// attempt 1: "delay=2s;status=503;trailer=x-backend:b1"
	// attempt 2: "reset=before-headers;trailer=x-backend:b1"
	// attempt 3: "trailer=x-backend:b1"
	// attempt 4: "grpc-status=UNAVAILABLE;trailer=x-backend:b1"
	// attempt 5: ""
}

// Text directives (grpc-message, trailer, script) run to the next ';', so
// a ',' inside them is kept; percent-encoding carries a ';'.
func ExampleParse_text() {
	spec, err := fault.Parse("grpc-status=unavailable,delay=1s;grpc-message=busy, retry%3B later;trailer=x-info:a,b", fault.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := spec.For(1)
	fmt.Printf("code=%v delay=%v message=%q trailers=%v\n", a.GRPCStatus, a.Delay, a.GRPCMessage, a.Trailers)
	// Output:
	// code=Unavailable delay=1s message="busy, retry; later" trailers=[{x-info a,b}]
}

// A reset names where the exchange is aborted and, with reset-code, the
// HTTP/2 error code of the RST_STREAM (INTERNAL_ERROR by default).
func ExampleParse_reset() {
	for _, s := range []string{"reset", "reset=mid-body", "reset=after-headers;reset-code=REFUSED_STREAM", "goaway"} {
		spec, err := fault.Parse(s, fault.Limits{})
		if err != nil {
			fmt.Println(err)
			return
		}
		a := spec.For(1)
		fmt.Printf("%-46s reset=%v code=%s goaway=%t\n", s, a.Reset, fault.ResetCodeName(a.ResetCode), a.GoAway)
	}
	// Output:
	// reset                                          reset=before-headers code=INTERNAL_ERROR goaway=false
	// reset=mid-body                                 reset=mid-body code=INTERNAL_ERROR goaway=false
	// reset=after-headers;reset-code=REFUSED_STREAM  reset=after-headers code=REFUSED_STREAM goaway=false
	// goaway                                         reset=none code=NO_ERROR goaway=true
}

// Every error is a *fault.Error naming the directive, the value, what is
// wrong and the accepted form. Limits bound delays and counts.
func ExampleParse_errors() {
	lim := fault.Limits{MaxDelay: time.Minute}
	for _, s := range []string{"delay=2m", "status=5xx", "fail=2;script=503", "reset-code=CANCEL"} {
		_, err := fault.Parse(s, lim)
		var fe *fault.Error
		if errors.As(err, &fe) {
			fmt.Printf("%s: %s (accepted: %s)\n", fe.Directive, fe.Reason, fe.Accepted)
		}
	}
	// Output:
	// delay: above the limit of 1m0s (accepted: a Go duration such as 1500ms, from 0 to 1m0s)
	// status: not an HTTP status code (accepted: an HTTP status code from 200 to 599)
	// fail: fail and script exclude each other (accepted: a whole number from 1 to 100, not together with script)
	// reset-code: needs reset or goaway (accepted: an HTTP/2 error code: a number from 0 to 4294967295 or a name such as INTERNAL_ERROR or CANCEL (any case), with reset or goaway)
}
