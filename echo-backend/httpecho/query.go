package httpecho

import (
	"net/url"
	"os"
	"strings"
)

// The handler reads at most three query parameters of a request
// (gatewitness-id, gatewitness-fault and delay). Parsing the whole query into
// url.Values for that allocated a map and its slices per request; queryGet
// finds one parameter in the raw query instead, with the same result.

// maxScannedPairs is the most '&'-separated pairs queryGet scans itself; a
// longer query goes through url.ParseQuery, which applies net/url's limit
// on the number of parameters (10000 by default, GODEBUG
// urlmaxqueryparams).
const maxScannedPairs = 1000

// queryLimitSet reports a GODEBUG urlmaxqueryparams setting, under which
// queryGet leaves every query to url.ParseQuery so the setting applies.
var queryLimitSet = strings.Contains(os.Getenv("GODEBUG"), "urlmaxqueryparams")

// queryGet returns what url.ParseQuery(raw) followed by Get(key) returns:
// the first value of key, or "". As there, pairs holding a ';' and pairs
// whose name or value is not valid query escaping are skipped, and '+'
// decodes to a space. key must need no unescaping (no '%' or '+').
func queryGet(raw, key string) string {
	if raw == "" {
		return ""
	}
	if queryLimitSet || strings.Count(raw, "&") >= maxScannedPairs {
		v, _ := url.ParseQuery(raw) // as URL.Query: keeps what parsed
		return v.Get(key)
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k != key {
			if !strings.ContainsAny(k, "%+") {
				continue // unescapes to itself, which is not key
			}
			if uk, err := url.QueryUnescape(k); err != nil || uk != key {
				continue
			}
		}
		if !strings.ContainsAny(v, "%+") {
			return v
		}
		uv, err := url.QueryUnescape(v)
		if err != nil {
			continue // url.ParseQuery drops the pair; a later one may count
		}
		return uv
	}
	return ""
}
