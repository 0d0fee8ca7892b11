package reports

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// WriteConformanceYAML writes report as upstream's conformance suite does
// (sigs.k8s.io/yaml, so field names follow the JSON tags). The one change
// is that profiles are sorted by name: upstream lists them in map order,
// which makes two reports of the same run differ.
func WriteConformanceYAML(w io.Writer, report *confv1.ConformanceReport) error {
	if report == nil {
		return errors.New("reports: conformance report is nil")
	}
	sorted := *report
	sorted.ProfileReports = slices.Clone(report.ProfileReports)
	slices.SortStableFunc(sorted.ProfileReports, func(a, b confv1.ProfileReport) int { return cmp.Compare(a.Name, b.Name) })
	raw, err := yaml.Marshal(sorted)
	if err != nil {
		return fmt.Errorf("reports: encoding the conformance report: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("reports: writing the conformance report: %w", err)
	}
	return nil
}

// ConformanceFileName returns the name the Gateway API project requires
// for a submitted report, "<API channel>-<implementation version>-<mode>-report.yaml"
// (conformance/reports/README.md), e.g. "standard-v1.2.0-default-report.yaml".
// Each part must be non-empty and may hold only letters, digits and
// ". _ + -", so the name is a plain file name.
func ConformanceFileName(report *confv1.ConformanceReport) (string, error) {
	if report == nil {
		return "", errors.New("reports: conformance report is nil")
	}
	parts := []struct{ field, value string }{
		{"gatewayAPIChannel", report.GatewayAPIChannel},
		{"implementation.version", report.Implementation.Version},
		{"mode", report.Mode},
	}
	for _, p := range parts {
		if err := checkFileNamePart(p.field, p.value); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s-%s-%s-report.yaml", report.GatewayAPIChannel, report.Implementation.Version, report.Mode), nil
}

// FileNamePartForm is the accepted form of a report field that names the
// report file (upstream names it <channel>-<version>-<mode>-report.yaml).
const FileNamePartForm = `letters, digits and ". _ + -", not starting with "."`

// CheckFileNamePart checks a value that becomes part of the report file's
// name; the error quotes the value and states FileNamePartForm.
func CheckFileNamePart(value string) error {
	if value == "" {
		return fmt.Errorf("empty; it names the report file; want %s", FileNamePartForm)
	}
	if value[0] == '.' {
		return fmt.Errorf("%q starts with '.'; want %s", value, FileNamePartForm)
	}
	for _, r := range value {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '+' || r == '-'
		if !ok {
			return fmt.Errorf("%q, which has %q; want %s", value, r, FileNamePartForm)
		}
	}
	return nil
}

// checkFileNamePart is CheckFileNamePart naming the report field.
func checkFileNamePart(field, value string) error {
	if err := CheckFileNamePart(value); err != nil {
		return fmt.Errorf("reports: report field %s is %w", field, err)
	}
	return nil
}
