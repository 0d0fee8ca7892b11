package fault_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gatewitness/gatewitness/echo-backend/fault"
)

func mustParse(t *testing.T, s string, lim fault.Limits) *fault.Spec {
	t.Helper()
	spec, err := fault.Parse(s, lim)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return spec
}

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		spec string
		want fault.Action
	}{
		{"", fault.Action{}},
		{" ; ;", fault.Action{}},
		{"delay=1500ms", fault.Action{Delay: 1500 * time.Millisecond}},
		{"delay=0s", fault.Action{}},
		{"delay=5m", fault.Action{Delay: 5 * time.Minute}},
		{"body-delay=2s", fault.Action{BodyDelay: 2 * time.Second}},
		{"chunks=3,interval=100ms", fault.Action{Chunks: 3, Interval: 100 * time.Millisecond}},
		{"chunks=3;interval=100ms", fault.Action{Chunks: 3, Interval: 100 * time.Millisecond}},
		{"interval=250ms", fault.Action{Interval: 250 * time.Millisecond}},
		{"messages=5,interval=1s", fault.Action{Messages: 5, Interval: time.Second}},
		{"status=503", fault.Action{Status: 503}},
		{"status=200", fault.Action{Status: 200}},
		{"status=599", fault.Action{Status: 599}},
		{"grpc-status=14", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unavailable}},
		{"grpc-status=0", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.OK}},
		{"grpc-status=16", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unauthenticated}},
		{"grpc-status=UNAVAILABLE", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unavailable}},
		{"grpc-status=unavailable", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unavailable}},
		{"grpc-status=deadline_exceeded", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.DeadlineExceeded}},
		{"grpc-status=DeadlineExceeded", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.DeadlineExceeded}},
		{"grpc-status=CANCELLED", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Canceled}},
		{"grpc-status=Canceled", fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Canceled}},
		{"grpc-status=14;grpc-message=try again, later",
			fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unavailable, GRPCMessage: "try again, later"}},
		{"grpc-status=14,grpc-message=a%3Bb%25c",
			fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unavailable, GRPCMessage: "a;b%c"}},
		{"trailer=X-Retry-Info:a=1, b=2", fault.Action{Trailers: []fault.Trailer{{"x-retry-info", "a=1, b=2"}}}},
		{"trailer=x-a:1;trailer=x-b:two%3Bthree",
			fault.Action{Trailers: []fault.Trailer{{"x-a", "1"}, {"x-b", "two;three"}}}},
		{"trailer=x-empty:", fault.Action{Trailers: []fault.Trailer{{"x-empty", ""}}}},
		{"trailer=x-time:12:30", fault.Action{Trailers: []fault.Trailer{{"x-time", "12:30"}}}},
		{"trailer=x-a:" + strings.Repeat("v", 1021), fault.Action{Trailers: []fault.Trailer{{"x-a", strings.Repeat("v", 1021)}}}},
		{"grpc-status=2;grpc-message=" + strings.Repeat("%41", 1024),
			fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unknown, GRPCMessage: strings.Repeat("A", 1024)}},
		{"reset", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 2}},
		{"reset=before-headers", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 2}},
		{"reset=after-headers", fault.Action{Reset: fault.ResetAfterHeaders, ResetCode: 2}},
		{"reset=Mid-Body", fault.Action{Reset: fault.ResetMidBody, ResetCode: 2}},
		{"reset;reset-code=CANCEL", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 8}},
		{"reset;reset-code=no_error", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 0}},
		{"reset;reset-code=HTTP_1_1_REQUIRED", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 0xd}},
		{"reset;reset-code=7", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 7}},
		{"reset;reset-code=4294967295", fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 1<<32 - 1}},
		{"goaway", fault.Action{GoAway: true, ResetCode: 0}},
		{"goaway;reset-code=ENHANCE_YOUR_CALM", fault.Action{GoAway: true, ResetCode: 0xb}},
		{"goaway;reset-code=INTERNAL_ERROR", fault.Action{GoAway: true, ResetCode: 2}},
		// With a reset too, the reset's default applies.
		{"goaway;reset=after-headers", fault.Action{GoAway: true, Reset: fault.ResetAfterHeaders, ResetCode: 2}},
		{"close", fault.Action{Close: true}},
		{"delay=1500ms;status=503", fault.Action{Delay: 1500 * time.Millisecond, Status: 503}},
		{" Delay = 1s ; STATUS=503 ", fault.Action{Delay: time.Second, Status: 503}},
	}
	for _, tt := range tests {
		spec := mustParse(t, tt.spec, fault.Limits{})
		if !reflect.DeepEqual(spec.Base, tt.want) {
			t.Errorf("Parse(%q).Base = %+v, want %+v", tt.spec, spec.Base, tt.want)
		}
		if spec.Raw != tt.spec {
			t.Errorf("Parse(%q).Raw = %q", tt.spec, spec.Raw)
		}
		if spec.Fail != 0 || spec.Script != nil {
			t.Errorf("Parse(%q): Fail %d, Script %v, want none", tt.spec, spec.Fail, spec.Script)
		}
		if got := spec.Base.Faulted(); got != (tt.want.String() != "") {
			t.Errorf("Parse(%q).Base.Faulted() = %v", tt.spec, got)
		}
	}
}

func TestParseScript(t *testing.T) {
	reset := func(p fault.ResetPoint, code uint32) fault.Action { return fault.Action{Reset: p, ResetCode: code} }
	tests := []struct {
		spec string
		base fault.Action
		want []fault.Action
	}{
		{"script=delay:2s+503|reset|ok", fault.Action{}, []fault.Action{
			{Delay: 2 * time.Second, Status: 503},
			reset(fault.ResetBeforeHeaders, 2),
			{},
		}},
		{"script=reset:after-headers|reset:mid-body+reset-code:CANCEL|close|goaway", fault.Action{}, []fault.Action{
			reset(fault.ResetAfterHeaders, 2),
			reset(fault.ResetMidBody, 8),
			{Close: true},
			{GoAway: true, ResetCode: 0},
		}},
		{"script=UNAVAILABLE+grpc-message:busy, retry|grpc-status:4|deadline_exceeded|OK", fault.Action{}, []fault.Action{
			{HasGRPCStatus: true, GRPCStatus: codes.Unavailable, GRPCMessage: "busy, retry"},
			{HasGRPCStatus: true, GRPCStatus: codes.DeadlineExceeded},
			{HasGRPCStatus: true, GRPCStatus: codes.DeadlineExceeded},
			{},
		}},
		// Base directives apply to every scripted attempt; an atom overrides,
		// also back to zero.
		{"delay=1s;status=502;script=503|delay:0s|ok", fault.Action{Delay: time.Second, Status: 502}, []fault.Action{
			{Delay: time.Second, Status: 503},
			{Status: 502},
			{Delay: time.Second, Status: 502},
		}},
		// Trailers of an atom replace the base's.
		{"trailer=x-a:1;script=trailer:x-b:2+trailer:x-c:3|ok", fault.Action{Trailers: []fault.Trailer{{"x-a", "1"}}}, []fault.Action{
			{Trailers: []fault.Trailer{{"x-b", "2"}, {"x-c", "3"}}},
			{Trailers: []fault.Trailer{{"x-a", "1"}}},
		}},
		// A base reset-code serves the scripted resets.
		{"reset-code=CANCEL;script=reset|ok", fault.Action{ResetCode: 8}, []fault.Action{
			reset(fault.ResetBeforeHeaders, 8),
			{},
		}},
		{"chunks=2;script=interval:1s|interval:2s", fault.Action{Chunks: 2}, []fault.Action{
			{Chunks: 2, Interval: time.Second},
			{Chunks: 2, Interval: 2 * time.Second},
		}},
		{"script= 503 | 200 ", fault.Action{}, []fault.Action{{Status: 503}, {Status: 200}}},
	}
	for _, tt := range tests {
		spec := mustParse(t, tt.spec, fault.Limits{})
		if !reflect.DeepEqual(spec.Base, tt.base) {
			t.Errorf("Parse(%q).Base = %+v, want %+v", tt.spec, spec.Base, tt.base)
		}
		if !reflect.DeepEqual(spec.Script, tt.want) {
			t.Errorf("Parse(%q).Script =\n%+v\nwant\n%+v", tt.spec, spec.Script, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec      string
		directive string
		value     string
		reason    string // substring of Reason
	}{
		{"delay=1.5", "delay", "1.5", "not a duration"},
		{"delay=-1s", "delay", "-1s", "negative"},
		{"delay=5m1s", "delay", "5m1s", "above the limit of 5m0s"},
		{"delay", "delay", "", "not a duration"},
		{"body-delay=soon", "body-delay", "soon", "not a duration"},
		{"interval=6m", "interval", "6m", "above the limit"},
		{"chunks=0", "chunks", "0", "1 to 10000"},
		{"chunks=10001", "chunks", "10001", "1 to 10000"},
		{"chunks=-3", "chunks", "-3", "whole number"},
		{"chunks=+3", "chunks", "+3", "whole number"},
		{"chunks=3x", "chunks", "3x", "whole number"},
		{"messages=0", "messages", "0", "1 to 10000"},
		{"messages=99999999999999999999", "messages", "99999999999999999999", "whole number"},
		{"status=99", "status", "99", "not an HTTP status"},
		{"status=600", "status", "600", "not an HTTP status"},
		{"status=100", "status", "100", "informational"},
		{"status=103", "status", "103", "informational"},
		{"status=199", "status", "199", "informational"},
		{"status=abc", "status", "abc", "not an HTTP status"},
		{"grpc-status=17", "grpc-status", "17", "not a gRPC code"},
		{"grpc-status=unavailable_", "grpc-status", "unavailable_", "not a gRPC code"},
		{"grpc-status=", "grpc-status", "", "not a gRPC code"},
		{"grpc-message=x", "grpc-message", "x", "needs grpc-status"},
		{"grpc-status=2;grpc-message=50%", "grpc-message", "50%", "percent-encoding"},
		{"trailer=x-a", "trailer", "x-a", "missing ':'"},
		{"trailer=:v", "trailer", ":v", "empty trailer name"},
		{"trailer=x a:v", "trailer", "x a:v", "invalid character"},
		{"trailer=grpc-status:0", "trailer", "grpc-status:0", "reserved"},
		{"trailer=Content-Length:0", "trailer", "Content-Length:0", "reserved"},
		{"trailer=x-a:%0D%0Ainjected: 1", "trailer", "x-a:%0D%0Ainjected: 1", "invalid byte"},
		{"trailer=x-a:%C3%A9", "trailer", "x-a:%C3%A9", "invalid byte"},
		{"trailer=x-a:%20padded", "trailer", "x-a:%20padded", "leading or trailing spaces"},
		{"trailer=x-a:%zz", "trailer", "x-a:%zz", "percent-encoding"},
		{"trailer=x-0:0;trailer=x-1:1;trailer=x-2:2;trailer=x-3:3;trailer=x-4:4;trailer=x-5:5;trailer=x-6:6;" +
			"trailer=x-7:7;trailer=x-8:8;trailer=x-9:9;trailer=x-10:10;trailer=x-11:11;trailer=x-12:12;" +
			"trailer=x-13:13;trailer=x-14:14;trailer=x-15:15;trailer=x-16:16", "trailer", "x-16:16", "more than 16"},
		{"reset=later", "reset", "later", "not a reset point"},
		{"reset=", "reset", "", "empty reset point"},
		{"reset;reset-code=SOMETHING", "reset-code", "SOMETHING", "not an HTTP/2 error code"},
		{"reset;reset-code=4294967296", "reset-code", "4294967296", "not an HTTP/2 error code"},
		{"reset-code=CANCEL", "reset-code", "CANCEL", "needs reset or goaway"},
		{"goaway=now", "goaway", "now", "takes no value"},
		{"close=1", "close", "1", "takes no value"},
		{"fail=0", "fail", "0", "1 to 100"},
		{"fail=101", "fail", "101", "1 to 100"},
		{"fail=2;script=503", "fail", "2", "exclude each other"},
		{"unknown=1", "unknown", "1", "unknown directive"},
		{"=1", "=1", "1", "missing directive name"},
		{"delay=1s;delay=2s", "delay", "2s", "more than once"},
		{"status=500,status=503", "status", "503", "more than once"},
		{"reset;reset=mid-body", "reset", "mid-body", "more than once"},
		{"script=", "script", "", "empty"},
		{"script=503||ok", "script", "503||ok", "action 2 has an empty atom"},
		{"script=503+", "script", "503+", "action 1 has an empty atom"},
		{"script=maybe", "script", "maybe", "unknown atom"},
		{"script=14", "script", "14", "unknown atom"},
		{"script=099", "status", "099", "not an HTTP status"},
		{"script=103", "status", "103", "is not a final answer (script action 1)"},
		{"script=ok|status:100", "status", "100", "is not a final answer (script action 2)"},
		{"script=ok|delay:forever", "delay", "forever", "not a duration (script action 2)"},
		{"script=foo:1", "foo", "1", "unknown directive"},
		{"script=ok|:1", "script", ":1", "no directive name before ':' (script action 2)"},
		{"script=fail:1", "fail", "1", "not allowed inside script"},
		{"script=503+status:502", "status", "502", "more than once in one action"},
		{"script=reset-code:CANCEL|reset", "reset-code", "CANCEL", "needs reset or goaway (script action 1)"},
		{"script=grpc-message:x", "grpc-message", "x", "needs grpc-status (script action 1)"},
		{"reset-code=CANCEL;script=503", "reset-code", "CANCEL", "no scripted attempt uses it"},
		{"grpc-message=m;script=503", "grpc-message", "m", "no scripted attempt uses it"},
		{"script=goaway:1", "goaway", "1", "takes no value"},
		{"script=reset:", "reset", "", "empty reset point"},
		{"script=" + strings.Repeat("ok|", 100) + "ok", "script", strings.Repeat("ok|", 100) + "ok", "101 actions"},
		{"delay=4m;body-delay=2m", "delay+body-delay", "6m0s", "too long"},
		{"delay=1m;chunks=5,interval=1m", "delay+chunks*interval", "more than 5m0s", "too long"},
		{"messages=10000;interval=31ms", "messages*interval", "more than 5m0s", "too long"},
		{"delay=5m;script=body-delay:1ns", "delay+body-delay", "5m0.000000001s", "too long (script action 1)"},
		{strings.Repeat("close;", 1400), "spec", strings.Repeat("close;", 6)[:32] + "...", "too long (8400 bytes)"},
		{"grpc-status=2;grpc-message=" + strings.Repeat("%41", 1025), "grpc-message", strings.Repeat("%41", 1025), "longer than 1024 bytes"},
		{"trailer=x-a:" + strings.Repeat("v", 1022), "trailer", "x-a:" + strings.Repeat("v", 1022), "longer than 1024 bytes together"},
		{"trailer=x-a:" + strings.Repeat("v", 600) + ";trailer=x-b:" + strings.Repeat("v", 419), "trailer",
			"x-b:" + strings.Repeat("v", 419), "longer than 1024 bytes together"},
	}
	for _, tt := range tests {
		spec, err := fault.Parse(tt.spec, fault.Limits{})
		var fe *fault.Error
		if !errors.As(err, &fe) {
			t.Errorf("Parse(%q) = %+v, %v; want a *fault.Error", tt.spec, spec, err)
			continue
		}
		if spec != nil {
			t.Errorf("Parse(%q) returned a spec with its error", tt.spec)
		}
		if fe.Directive != tt.directive || fe.Value != tt.value || !strings.Contains(fe.Reason, tt.reason) {
			t.Errorf("Parse(%q) error: directive %q value %q reason %q; want %q %q %q",
				tt.spec, fe.Directive, fe.Value, fe.Reason, tt.directive, tt.value, tt.reason)
		}
		if fe.Accepted == "" {
			t.Errorf("Parse(%q) error has no accepted form: %v", tt.spec, err)
		}
		if msg := err.Error(); !strings.Contains(msg, `fault directive "`+tt.directive+`"`) || !strings.Contains(msg, "accepted: ") {
			t.Errorf("Parse(%q) error message %q does not name the directive and the accepted form", tt.spec, msg)
		}
	}
}

// TestLongestActionRoundTrips builds the action whose String is longest
// (all text escaped, every directive at its widest) and checks that its
// String still parses back to it.
func TestLongestActionRoundTrips(t *testing.T) {
	var b strings.Builder
	b.WriteString("delay=4m59.999999997s;body-delay=1ns;chunks=1;interval=1ns;messages=1;status=599;" +
		"grpc-status=FAILED_PRECONDITION;reset=before-headers;goaway;reset-code=4294967295;close")
	trailerBytes := 0
	for i := range fault.MaxTrailers {
		name := "x-" + strconv.Itoa(i)
		value := strings.Repeat("%2C", (fault.MaxTrailerBytes/fault.MaxTrailers)-len(name))
		trailerBytes += len(name) + len(value)/3
		b.WriteString(";trailer=" + name + ":" + value)
	}
	b.WriteString(";grpc-message=" + strings.Repeat("\x01", fault.MaxMessageLen))
	spec := mustParse(t, b.String(), fault.Limits{})
	if len(spec.Base.Trailers) != fault.MaxTrailers || trailerBytes != fault.MaxTrailerBytes || len(spec.Base.GRPCMessage) != fault.MaxMessageLen {
		t.Fatalf("the spec is not the widest: %d trailers, %d trailer bytes, %d message bytes",
			len(spec.Base.Trailers), trailerBytes, len(spec.Base.GRPCMessage))
	}
	out := spec.Base.String()
	if len(out) > fault.MaxSpecLen {
		t.Fatalf("String is %d bytes, above MaxSpecLen %d", len(out), fault.MaxSpecLen)
	}
	roundTrip(t, spec)
}

func TestErrorMessage(t *testing.T) {
	_, err := fault.Parse("delay=1.5", fault.Limits{})
	want := `fault directive "delay" (value "1.5"): not a duration; accepted: a Go duration such as 1500ms, from 0 to 5m0s`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestLimits(t *testing.T) {
	lim := fault.Limits{MaxDelay: time.Second, MaxChunks: 4, MaxMessages: 3, MaxAttempts: 2}
	ok := []string{
		"delay=1s", "chunks=4", "messages=3", "fail=2", "script=503|503",
		"chunks=4,interval=250ms", "messages=2,interval=500ms", "delay=500ms;body-delay=500ms",
	}
	for _, s := range ok {
		if _, err := fault.Parse(s, lim); err != nil {
			t.Errorf("Parse(%q, %+v): %v", s, lim, err)
		}
	}
	bad := []struct{ spec, directive string }{
		{"delay=1001ms", "delay"},
		{"chunks=5", "chunks"},
		{"messages=4", "messages"},
		{"fail=3", "fail"},
		{"script=503|503|503", "script"},
		{"chunks=4,interval=251ms", "chunks*interval"},
		{"messages=3,interval=334ms", "messages*interval"},
		{"delay=500ms;body-delay=501ms", "delay+body-delay"},
		{"delay=1ms;chunks=4,interval=250ms", "delay+chunks*interval"},
	}
	for _, tt := range bad {
		_, err := fault.Parse(tt.spec, lim)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Directive != tt.directive {
			t.Errorf("Parse(%q, %+v) = %v; want an error on %q", tt.spec, lim, err, tt.directive)
		}
	}
	// A zero Limits field means the default.
	if _, err := fault.Parse("delay=5m", fault.Limits{MaxChunks: 1}); err != nil {
		t.Errorf("zero MaxDelay is not the default: %v", err)
	}
	if _, err := fault.Parse("chunks=2", fault.Limits{MaxChunks: 1}); err == nil {
		t.Error("MaxChunks 1 accepted chunks=2")
	}
}

func TestFor(t *testing.T) {
	s503 := fault.Action{Status: 503}
	tests := []struct {
		spec string
		want []fault.Action // attempts 1, 2, ...
	}{
		{"", []fault.Action{{}, {}, {}}},
		{"status=503", []fault.Action{s503, s503, s503, s503}},
		{"fail=2;status=503", []fault.Action{s503, s503, {}, {}}},
		{"fail=1;status=503", []fault.Action{s503, {}, {}}},
		{"script=503|ok|reset", []fault.Action{s503, {}, {Reset: fault.ResetBeforeHeaders, ResetCode: 2}, {}, {}}},
		{"status=503;script=ok|502", []fault.Action{s503, {Status: 502}, {}}},
	}
	for _, tt := range tests {
		spec := mustParse(t, tt.spec, fault.Limits{})
		for i, want := range tt.want {
			if got := spec.For(i + 1); !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(%q).For(%d) = %+v, want %+v", tt.spec, i+1, got, want)
			}
		}
		if got, want := spec.For(0), spec.For(1); !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q).For(0) = %+v, want For(1) = %+v", tt.spec, got, want)
		}
	}
	var nilSpec *fault.Spec
	if got := nilSpec.For(1); got.Faulted() {
		t.Errorf("nil Spec For(1) = %+v, want the zero action", got)
	}
}

func TestActionString(t *testing.T) {
	tests := []struct {
		a    fault.Action
		want string
	}{
		{fault.Action{}, ""},
		{fault.Action{Delay: 1500 * time.Millisecond, Status: 503}, "delay=1.5s;status=503"},
		{fault.Action{Chunks: 3, Interval: 100 * time.Millisecond}, "chunks=3;interval=100ms"},
		{fault.Action{HasGRPCStatus: true, GRPCStatus: codes.Unavailable, GRPCMessage: " a;b, c% "},
			"grpc-status=UNAVAILABLE;grpc-message=%20a%3Bb%2C c%25%20"},
		{fault.Action{HasGRPCStatus: true, GRPCStatus: codes.OK}, "grpc-status=OK"},
		{fault.Action{Reset: fault.ResetMidBody, ResetCode: 2}, "reset=mid-body"},
		{fault.Action{Reset: fault.ResetAfterHeaders, ResetCode: 0}, "reset=after-headers;reset-code=NO_ERROR"},
		{fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: 99}, "reset=before-headers;reset-code=99"},
		{fault.Action{GoAway: true, ResetCode: 0}, "goaway"},
		{fault.Action{GoAway: true, ResetCode: 2}, "goaway;reset-code=INTERNAL_ERROR"},
		{fault.Action{GoAway: true, Reset: fault.ResetMidBody, ResetCode: 2}, "reset=mid-body;goaway"},
		{fault.Action{GoAway: true, Reset: fault.ResetMidBody, ResetCode: 0}, "reset=mid-body;goaway;reset-code=NO_ERROR"},
		{fault.Action{Close: true}, "close"},
		{fault.Action{Trailers: []fault.Trailer{{"x-a", "1,2"}, {"x-b", "c"}}}, "trailer=x-a:1%2C2;trailer=x-b:c"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.a, got, tt.want)
		}
	}
}

// roundTrip checks that every action spec gives round-trips through String.
func roundTrip(t *testing.T, spec *fault.Spec) {
	t.Helper()
	for i := 1; i <= len(spec.Script)+spec.Fail+1; i++ {
		a := spec.For(i)
		back, err := fault.Parse(a.String(), fault.Limits{})
		if err != nil {
			t.Fatalf("Parse(%q).For(%d).String() = %q does not parse: %v", spec.Raw, i, a.String(), err)
		}
		if !reflect.DeepEqual(back.Base, a) || back.Fail != 0 || back.Script != nil {
			t.Fatalf("Parse(%q).For(%d) = %+v; its String %q parses back as %+v", spec.Raw, i, a, a.String(), back)
		}
	}
}

// seeds are valid and invalid specs for the fuzz corpus and the round trip.
var seeds = []string{
	"",
	"delay=1500ms;status=503",
	"delay=1.5",
	"body-delay=1s,chunks=3,interval=100ms",
	"messages=4;interval=10ms;grpc-status=unavailable;grpc-message=busy, later%21",
	"grpc-status=14;grpc-message= x ;trailer=x-a:1,2;trailer=X-B:%41",
	"reset;reset-code=CANCEL",
	"reset=mid-body;chunks=2",
	"goaway;reset-code=0",
	"goaway;reset-code=INTERNAL_ERROR",
	"goaway;reset=mid-body",
	"script=goaway|goaway+reset-code:2|reset",
	"close",
	"fail=2;status=503",
	"script=delay:2s+503|reset|ok",
	"delay=1s;script=reset:after-headers+reset-code:REFUSED_STREAM|UNAVAILABLE+grpc-message:a+trailer:x-c:d|delay:0s",
	"reset-code=8;script=goaway|close|ok",
	"script=|",
	"trailer=grpc-x:1",
	"status=503;status=503",
	"status=103",
	"script=200|101",
	"=;=,=",
	"sCript=:", // found by the fuzzer: an atom with an empty name
	// found by the fuzzer: escaping made String longer than the spec limit
	"grpC-stAtus=0,grpC-messAge=0+\xc1\xc1\xc1\xc1\xc1\xc1\xc1\xc1++00\x1f0",
}

func TestRoundTrip(t *testing.T) {
	for _, s := range seeds {
		spec, err := fault.Parse(s, fault.Limits{})
		if err != nil {
			continue
		}
		roundTrip(t, spec)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := fault.Parse(s, fault.Limits{})
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Parse(%q) error %v is a %T, want *fault.Error", s, err, err)
			}
			if fe.Directive == "" || fe.Accepted == "" {
				t.Fatalf("Parse(%q) error %#v lacks the directive or the accepted form", s, fe)
			}
			return
		}
		roundTrip(t, spec)
	})
}

// BenchmarkParse parses a typical retry spec, as the servers do on every
// request that carries one.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fault.Parse("delay=100ms;script=503|reset:after-headers+reset-code:CANCEL|ok", fault.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForString is the per-attempt cost of choosing the action and
// recording it in the ledger.
func BenchmarkForString(b *testing.B) {
	spec, err := fault.Parse("fail=2;delay=1500ms;status=503", fault.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = spec.For(1).String()
	}
}
