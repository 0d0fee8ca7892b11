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

	"github.com/gatewitness/gatewitness/contract/observe"
)

// GatewitnessReportFileName is the name of the gatewitness report in a report
// directory.
const GatewitnessReportFileName = "gatewitness-report.yaml"

// GatewitnessReport is gatewitness's counterpart of upstream's
// ConformanceReport: the results of gatewitness's profiles, counted from
// gatewitness's tests only, with what each test observed and what the
// verdicts depend on (the environment and the timing tolerance). It never
// holds an upstream test.
type GatewitnessReport struct {
	metav1.TypeMeta `json:",inline"`
	// Date is when the run started, RFC 3339.
	Date string `json:"date"`
	// Status is the run's (empty for a complete run); an interrupted or
	// incomplete run has no profile results.
	Status RunStatus `json:"status,omitempty"`
	// Interruption says when and by which signal an interrupted run was
	// stopped.
	Interruption *Interruption `json:"interruption,omitempty"`
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
	// ProfileReports are the gatewitness profiles' results, in upstream's
	// shape.
	ProfileReports []confv1.ProfileReport `json:"profiles"`
	// TimeToConsistency is how long the run's configuration steps took to
	// be served, per kind of step, over every test's steps (upstream's
	// tests record none).
	TimeToConsistency []ConsistencySummary `json:"timeToConsistency,omitempty"`
	// Tests are gatewitness's tests.
	Tests []GatewitnessTest `json:"tests"`
}

// ConsistencySummary is a ConsistencyStats as the report writes it:
// durations as Go durations, to the millisecond.
type ConsistencySummary struct {
	Step    string           `json:"step"`
	Steps   int              `json:"steps"`
	P50     string           `json:"p50"`
	P95     string           `json:"p95"`
	Max     string           `json:"max"`
	Slowest []SlowConsistent `json:"slowest,omitempty"`
}

// SlowConsistent is one of the slowest steps: the test, what it
// configured, and when it was first served and served on every path.
type SlowConsistent struct {
	Test        string `json:"test"`
	Routes      string `json:"routes,omitempty"`
	FirstServed string `json:"firstServed"`
	Served      string `json:"served"`
}

// consistencySummaries are run's TimeToConsistency as the report writes it.
func consistencySummaries(run *Run) []ConsistencySummary {
	var out []ConsistencySummary
	for _, c := range TimeToConsistency(run) {
		cs := ConsistencySummary{Step: c.Step, Steps: c.Steps, P50: msDuration(c.P50), P95: msDuration(c.P95), Max: msDuration(c.Max)}
		for _, st := range c.Slowest {
			cs.Slowest = append(cs.Slowest, SlowConsistent{Test: st.Test, Routes: st.Routes,
				FirstServed: msDuration(st.FirstServed), Served: msDuration(st.Served)})
		}
		out = append(out, cs)
	}
	return out
}

// msDuration is d to the millisecond, as a Go duration.
func msDuration(d time.Duration) string { return d.Round(time.Millisecond).String() }

// GatewitnessTest is one of gatewitness's tests in the gatewitness report.
type GatewitnessTest struct {
	Name         string                `json:"name"`
	Result       Result                `json:"result"`
	Duration     string                `json:"duration"`
	Features     []string              `json:"features,omitempty"`
	Profiles     []string              `json:"profiles,omitempty"`
	Message      string                `json:"message,omitempty"`
	Observations []observe.Observation `json:"observations,omitempty"`
}

// GatewitnessReportAPIVersion and GatewitnessReportKind are the gatewitness
// report's apiVersion and kind.
const (
	GatewitnessReportAPIVersion = "gatewitness.github.io/v1alpha1"
	GatewitnessReportKind       = "GatewitnessReport"
)

// NewGatewitnessReport builds the gatewitness report of run.
func NewGatewitnessReport(run *Run) (*GatewitnessReport, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	r := &GatewitnessReport{
		TypeMeta:        metav1.TypeMeta{APIVersion: GatewitnessReportAPIVersion, Kind: GatewitnessReportKind},
		Implementation:  run.Implementation,
		Mode:            run.Mode,
		Status:          run.Status,
		Interruption:    run.Interruption,
		Target:          run.Target,
		Environment:     run.Environment,
		TimingTolerance: run.TimingTolerance.String(),
		RetryBudgetLoad: run.RetryBudgetLoad,
		ProfileReports:  slices.Clone(run.GatewitnessProfiles),
		Tests:           []GatewitnessTest{},

		TimeToConsistency: consistencySummaries(run),
	}
	if !run.Started.IsZero() {
		r.Date = run.Started.UTC().Format(time.RFC3339)
	}
	for _, f := range run.Claims.Features {
		r.ClaimedFeatures = append(r.ClaimedFeatures, string(f))
	}
	slices.SortStableFunc(r.ProfileReports, func(a, b confv1.ProfileReport) int { return cmp.Compare(a.Name, b.Name) })
	MarkNotClaimed(r.ProfileReports)
	for _, t := range run.bySource(Gatewitness) {
		gt := GatewitnessTest{
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

// WriteGatewitnessYAML writes the gatewitness report of run as YAML.
func WriteGatewitnessYAML(w io.Writer, run *Run) error {
	r, err := NewGatewitnessReport(run)
	if err != nil {
		return err
	}
	raw, err := yaml.Marshal(r)
	if err != nil {
		return fmt.Errorf("reports: encoding the gatewitness report: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("reports: writing the gatewitness report: %w", err)
	}
	return nil
}

// hasGatewitness reports whether run has anything for the gatewitness report.
func (r *Run) hasGatewitness() bool {
	return len(r.GatewitnessProfiles) > 0 || len(r.bySource(Gatewitness)) > 0
}

var errNoUpstream = errors.New("reports: the run has no upstream ConformanceReport")
