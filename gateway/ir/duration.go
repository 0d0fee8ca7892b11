package ir

import (
	"fmt"
	"regexp"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// durationPattern is the Gateway API Duration syntax (GEP-2257).
var durationPattern = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// ParseDuration parses an optional Gateway API Duration (GEP-2257); nil
// and "0s" give zero. An error names field and states the accepted form.
func ParseDuration(field string, d *gwv1.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if !durationPattern.MatchString(string(*d)) {
		return 0, fmt.Errorf("%s: %q is not a Gateway API duration; accepted form: 1 to 4 groups of up to 5 digits and a unit h, m, s or ms, such as 10s or 1m30s", field, *d)
	}
	v, err := time.ParseDuration(string(*d))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}
