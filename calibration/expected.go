package calibration

import "github.com/gatewitness/gatewitness/reports"

// Row is one expected verdict: the test, the verdict, and the directive
// or documented behaviour that decides it, with the documentation's
// section.
type Row struct {
	Test    string
	Verdict reports.Result
	Why     string
	Doc     string
}

var (
	haproxyNoBuffer, haproxyOverClaim, nginxHTTP10, nginxOverClaim []Row
)
