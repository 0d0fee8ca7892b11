package reports

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatecheck/gatecheck/conformance/observe"
)

// GatecheckReportFileName is the name of the gatecheck report in a report
// directory.
const GatecheckReportFileName = "gatecheck-report.yaml"

// GatecheckReport is gatecheck's counterpart of upstream's
// ConformanceReport: the results of gatecheck's profiles, counted from
// gatecheck's tests only, with what each test observed and what the
// verdicts depend on (the environment and the timing tolerance). It never
// holds an upstream test.
type GatecheckReport struct {
	metav1.TypeMeta `json:",inline"`
	// Date is when the run started, RFC 3339.
	Date string `json:"date"`
	// Implementation and Mode are as in upstream's report.
	Implementation confv1.Implementation `json:"implementation"`
	Mode           string                `json:"mode"`
	// Target says what was tested.
	Target Target `json:"target"`
	// Environment holds the versions the results depend on.
	Environment Environment `json:"environment"`
	// TimingTolerance is how late a timed behaviour could be and still
	// pass, as a Go duration.
	TimingTolerance string `json:"timingTolerance"`
	// RetryBudgetLoad is the load of the retry-budget load tests.
	RetryBudgetLoad *RetryBudgetLoad `json:"retryBudgetLoad,omitempty"`
	// ClaimedFeatures are the features the run tested.
	ClaimedFeatures []string `json:"claimedFeatures,omitempty"`
	// ProfileReports are the gatecheck profiles' results, in upstream's
	// shape.
	ProfileReports []confv1.ProfileReport `json:"profiles"`
	// Tests are gatecheck's tests.
	Tests []GatecheckTest `json:"tests"`
}

// GatecheckTest is one of gatecheck's tests in the gatecheck report.
type GatecheckTest struct {
	Name         string                `json:"name"`
	Result       Result                `json:"result"`
	Duration     string                `json:"duration"`
	Features     []string              `json:"features,omitempty"`
	Profiles     []string              `json:"profiles,omitempty"`
	Message      string                `json:"message,omitempty"`
	Observations []observe.Observation `json:"observations,omitempty"`
}

// GatecheckReportAPIVersion and GatecheckReportKind are the gatecheck
// report's apiVersion and kind.
const (
	GatecheckReportAPIVersion = "gatecheck.github.io/v1alpha1"
	GatecheckReportKind       = "GatecheckReport"
)

// NewGatecheckReport builds the gatecheck report of run.
func NewGatecheckReport(run *Run) (*GatecheckReport, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	r := &GatecheckReport{
		TypeMeta:        metav1.TypeMeta{APIVersion: GatecheckReportAPIVersion, Kind: GatecheckReportKind},
		Implementation:  run.Implementation,
		Mode:            run.Mode,
		Target:          run.Target,
		Environment:     run.Environment,
		TimingTolerance: run.TimingTolerance.String(),
		RetryBudgetLoad: run.RetryBudgetLoad,
		ProfileReports:  slices.Clone(run.GatecheckProfiles),
		Tests:           []GatecheckTest{},
	}
	if !run.Started.IsZero() {
		r.Date = run.Started.UTC().Format(time.RFC3339)
	}
	for _, f := range run.Claims.Features {
		r.ClaimedFeatures = append(r.ClaimedFeatures, string(f))
	}
	slices.SortStableFunc(r.ProfileReports, func(a, b confv1.ProfileReport) int { return cmp.Compare(a.Name, b.Name) })
	for _, t := range run.bySource(Gatecheck) {
		gt := GatecheckTest{
			Name:     t.ShortName,
			Result:   t.Result,
			Duration: duration(t.Duration),
			Profiles: t.Profiles,
			Message:  clean(truncate(t.Message, MaxMessageLen)),
		}
		for _, f := range t.Features {
			gt.Features = append(gt.Features, string(f))
		}
		gt.Observations, _ = capObservations(t)
		r.Tests = append(r.Tests, gt)
	}
	return r, nil
}

// WriteGatecheckYAML writes the gatecheck report of run as YAML.
func WriteGatecheckYAML(w io.Writer, run *Run) error {
	r, err := NewGatecheckReport(run)
	if err != nil {
		return err
	}
	raw, err := yaml.Marshal(r)
	if err != nil {
		return fmt.Errorf("reports: encoding the gatecheck report: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("reports: writing the gatecheck report: %w", err)
	}
	return nil
}

// hasGatecheck reports whether run has anything for the gatecheck report.
func (r *Run) hasGatecheck() bool {
	return len(r.GatecheckProfiles) > 0 || len(r.bySource(Gatecheck)) > 0
}

var errNoUpstream = errors.New("reports: the run has no upstream ConformanceReport")
