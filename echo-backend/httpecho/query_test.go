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
	"gatewitness-id=abc",
	"delay=1s&gatewitness-id=abc&gatewitness-id=def",
	"gatewitness-id=&gatewitness-id=x",
	"gatewitness-id",
	"gatewitness%2Did=escaped-name",
	"gatewitness-id=a%20b+c",
	"gatewitness-id=bad%zz&gatewitness-id=good",
	"gatewitness%zzid=x&gatewitness-id=y",
	"gatewitness-id=a;b&gatewitness-id=c",
	"a=1;gatewitness-id=2",
	"&&gatewitness-fault=status%3D418%3Bdelay%3D1s&",
	"gatewitness-fault=status=418",
	"delay=1s&delay=2s",
	"x=%&delay=5ms",
	"gatewitness+id=1&gatewitness id=2",
	"Gatewitness-Id=upper",
	"=v&gatewitness-id==v",
}

var queryKeys = []string{"gatewitness-id", "gatewitness-fault", "delay", "x"}

func TestQueryGetMatchesNetURL(t *testing.T) {
	long := strings.Repeat("a=1&", maxScannedPairs) + "gatewitness-id=far" // through url.ParseQuery
	tooLong := strings.Repeat("a=1&", 10000) + "gatewitness-id=too-far"    // over net/url's limit
	for _, raw := range append(queryCases, long, tooLong) {
		want, _ := url.ParseQuery(raw)
		for _, key := range queryKeys {
			if got := queryGet(raw, key); got != want.Get(key) {
				t.Errorf("queryGet(%.60q, %q) = %q, url.ParseQuery gives %q", raw, key, got, want.Get(key))
			}
		}
	}
	if got := queryGet(long, "gatewitness-id"); got != "far" {
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
	const raw = "gatewitness-id=0f8e2c1a-5b7d-4e3f-9a6c-2d1b0e8f7a9c"
	b.Run("queryGet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if queryGet(raw, "gatewitness-id") == "" || queryGet(raw, "gatewitness-fault") != "" || queryGet(raw, "delay") != "" {
				b.Fatal("wrong value")
			}
		}
	})
	b.Run("url.ParseQuery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			q, _ := url.ParseQuery(raw)
			if q.Get("gatewitness-id") == "" || q.Get("gatewitness-fault") != "" || q.Get("delay") != "" {
				b.Fatal("wrong value")
			}
		}
	})
}
