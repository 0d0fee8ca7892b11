package tailbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestKeepsTheLastBytes(t *testing.T) {
	b := New(5)
	for _, s := range []string{"abc", "defg", "h"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	if got := b.String(); got != "defgh" {
		t.Errorf("String() = %q; want %q", got, "defgh")
	}
	b.Write([]byte("0123456789"))
	if got := b.String(); got != "56789" {
		t.Errorf("after a write longer than Max: %q; want %q", got, "56789")
	}
}

func TestConcurrentWrites(t *testing.T) {
	b := New(64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 64) {
		t.Errorf("String() = %q; want 64 x", got)
	}
}
