package httpecho

import (
	"net/url"
	"strings"
	"testing"
)

// queryCases hold queries whose parsing has edge cases: escapes in names
// and values, invalid escapes, semicolons, repeated and empty names.
var queryCases = []string{
	"",
	"gatecheck-id=abc",
	"delay=1s&gatecheck-id=abc&gatecheck-id=def",
	"gatecheck-id=&gatecheck-id=x",
	"gatecheck-id",
	"gatecheck%2Did=escaped-name",
	"gatecheck-id=a%20b+c",
	"gatecheck-id=bad%zz&gatecheck-id=good",
	"gatecheck%zzid=x&gatecheck-id=y",
	"gatecheck-id=a;b&gatecheck-id=c",
	"a=1;gatecheck-id=2",
	"&&gatecheck-fault=status%3D418%3Bdelay%3D1s&",
	"gatecheck-fault=status=418",
	"delay=1s&delay=2s",
	"x=%&delay=5ms",
	"gatecheck+id=1&gatecheck id=2",
	"Gatecheck-Id=upper",
	"=v&gatecheck-id==v",
}

var queryKeys = []string{"gatecheck-id", "gatecheck-fault", "delay", "x"}

func TestQueryGetMatchesNetURL(t *testing.T) {
	long := strings.Repeat("a=1&", maxScannedPairs) + "gatecheck-id=far" // through url.ParseQuery
	tooLong := strings.Repeat("a=1&", 10000) + "gatecheck-id=too-far"    // over net/url's limit
	for _, raw := range append(queryCases, long, tooLong) {
		want, _ := url.ParseQuery(raw)
		for _, key := range queryKeys {
			if got := queryGet(raw, key); got != want.Get(key) {
				t.Errorf("queryGet(%.60q, %q) = %q, url.ParseQuery gives %q", raw, key, got, want.Get(key))
			}
		}
	}
	if got := queryGet(long, "gatecheck-id"); got != "far" {
		t.Errorf("queryGet(long query) = %q, want far", got)
	}
}

func FuzzQueryGet(f *testing.F) {
	for _, raw := range queryCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		want, _ := url.ParseQuery(raw)
		for _, key := range queryKeys {
			if got := queryGet(raw, key); got != want.Get(key) {
				t.Errorf("queryGet(%q, %q) = %q, url.ParseQuery gives %q", raw, key, got, want.Get(key))
			}
		}
	})
}

func BenchmarkQueryGet(b *testing.B) {
	const raw = "gatecheck-id=0f8e2c1a-5b7d-4e3f-9a6c-2d1b0e8f7a9c"
	b.Run("queryGet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if queryGet(raw, "gatecheck-id") == "" || queryGet(raw, "gatecheck-fault") != "" || queryGet(raw, "delay") != "" {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("url.ParseQuery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			q, _ := url.ParseQuery(raw)
			if q.Get("gatecheck-id") == "" || q.Get("gatecheck-fault") != "" || q.Get("delay") != "" {
				b.Fatal("wrong value")
			}
		}
	})
}
