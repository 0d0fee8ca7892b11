package h2guard

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// frames returns the bytes of frames written by a real framer.
func frames(t *testing.T, write func(f *http2.Framer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(http2.NewFramer(&b, nil)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBucket: Burst frames that do no work pass, one more calls for
// calm; DATA the server sends credits the bucket; time refills it.
func TestBucket(t *testing.T) {
	start := time.Now()
	settings := frames(t, func(f *http2.Framer) error { return f.WriteSettings() })
	g := New(Limits{Burst: 3, Rate: 10}, start)
	for i := range 3 {
		if g.Read(settings, start) {
			t.Fatalf("calm after %d SETTINGS, want 3 allowed", i+1)
		}
	}
	// A 4 KiB DATA frame sent earns 2 + 4; an empty DATA that ends its
	// stream is no flood.
	g.Write(frames(t, func(f *http2.Framer) error { return f.WriteData(1, false, make([]byte, 4<<10)) }))
	g.Read(frames(t, func(f *http2.Framer) error { return f.WriteData(1, true, nil) }), start)
	for i := range 6 {
		if g.Read(frames(t, func(f *http2.Framer) error { return f.WriteWindowUpdate(1, 1) }), start) {
			t.Fatalf("calm after %d WINDOW_UPDATEs, want 6 credited", i+1)
		}
	}
	if !g.Read(settings, start) {
		t.Fatal("no calm with the bucket empty")
	}
	if !g.Read(nil, start.Add(time.Hour)) {
		t.Fatal("calm does not last")
	}
	g = New(Limits{Burst: 1, Rate: 10}, start)
	g.Read(settings, start)
	if g.Read(settings, start.Add(150*time.Millisecond)) {
		t.Fatal("the rate did not refill the bucket in 150ms at 10 a second")
	}
}

// TestFrameEnd follows the server's frames split anywhere and finds where
// the frame in progress ends.
func TestFrameEnd(t *testing.T) {
	out := frames(t, func(f *http2.Framer) error {
		if err := f.WriteSettings(); err != nil {
			return err
		}
		return f.WriteData(1, false, make([]byte, 100))
	})
	for cut := 0; cut <= len(out); cut++ {
		g := New(Limits{Burst: 1, Rate: 1}, time.Now())
		g.Write(out[:cut])
		rest := out[cut:]
		want := 0
		switch {
		case cut == 0 || cut == 9 || cut == len(out):
			want = 0 // at a boundary
		case cut < 9:
			want = 9 - cut
		default:
			want = len(out) - cut
		}
		if got := g.FrameEnd(rest); got != want {
			t.Errorf("after %d bytes: FrameEnd %d, want %d", cut, got, want)
		}
	}
}

func TestGoAway(t *testing.T) {
	g := New(Limits{Burst: 5, Rate: 1}, time.Now())
	g.Read(frames(t, func(f *http2.Framer) error {
		return f.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: []byte{0x82}, EndHeaders: true})
	}), time.Now())
	f, err := http2.NewFramer(nil, bytes.NewReader(g.GoAway())).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	ga, ok := f.(*http2.GoAwayFrame)
	if !ok || ga.ErrCode != http2.ErrCodeEnhanceYourCalm || ga.LastStreamID != 7 {
		t.Errorf("GoAway is %v, want GOAWAY ENHANCE_YOUR_CALM naming stream 7", f)
	}
}
