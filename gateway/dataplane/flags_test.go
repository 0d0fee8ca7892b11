package dataplane_test

import (
	"flag"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
)

// TestEveryLimitHasAFlag: each field of Limits has its flag, and parsing
// sets it.
func TestEveryLimitHasAFlag(t *testing.T) {
	var l dataplane.Limits
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l.AddFlags(fs)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if fields := reflect.TypeFor[dataplane.Limits]().NumField(); n != fields {
		t.Errorf("AddFlags defines %d flags for the %d fields of Limits", n, fields)
	}
	if err := fs.Parse([]string{"-limit-max-backend-requests=7", "-limit-response-write-timeout=-1s", "-limit-idle-frame-rate", "50"}); err != nil {
		t.Fatal(err)
	}
	if l.MaxBackendRequests != 7 || l.ResponseWriteTimeout != -time.Second || l.IdleFrameRate != 50 || l.MaxTunnels != dataplane.DefaultMaxTunnels {
		t.Errorf("parsed limits %+v", l)
	}
}
