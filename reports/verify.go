package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/internal/version"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// UpstreamNames are the names a submitted report may use: those of the
// upstream suite the report claims to come from.
type UpstreamNames struct {
	// Profiles, Features and Tests are upstream's profile, feature and
	// test names.
	Profiles, Features, Tests []string
}

// Finding is one broken submission rule.
type Finding struct {
	// Rule names the rule, e.g. "file name" or "results".
	Rule string
	// Message says what is wrong and what is wanted.
	Message string
}

func (f Finding) String() string { return f.Rule + ": " + f.Message }

// maxReportSize bounds the report and README VerifySubmission reads.
const maxReportSize = 1 << 20

// VerifySubmission checks the ConformanceReport YAML at path against the
// rules of upstream's conformance/reports/README.md for submitted reports,
// and returns the rules it breaks (none: the report can be submitted):
//
//   - it is a ConformanceReport with only the fields upstream's type has;
//   - its file name is <API channel>-<implementation version>-<mode>-report.yaml;
//   - its channel is standard or experimental, its gatewayAPIVersion a
//     semantic version, and it sits in <gatewayAPIVersion>/<implementation>/;
//   - every implementation field has a value: organization, project, an
//     http(s) URL, a semantic version, and a contact;
//   - mode is set;
//   - it has profiles, each with core and extended results of success or
//     partial, and names only upstream's profiles, features and tests;
//   - a README.md beside it has a table of contents row for it (channel,
//     version, mode, a [link](./file) to it) and a Reproduce section.
func VerifySubmission(path string, names UpstreamNames) ([]Finding, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	var findings []Finding
	add := func(rule, format string, args ...any) {
		findings = append(findings, Finding{rule, fmt.Sprintf(format, args...)})
	}
	var r confv1.ConformanceReport
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		add("format", "not a ConformanceReport as upstream's suite writes it: %v", err)
		if err := yaml.Unmarshal(data, &r); err != nil {
			return findings, nil
		}
	}
	if r.APIVersion != confv1.GroupVersion.String() || r.Kind != "ConformanceReport" {
		add("format", "apiVersion %q, kind %q; want %q, %q", r.APIVersion, r.Kind, confv1.GroupVersion.String(), "ConformanceReport")
	}
	if _, err := time.Parse(time.RFC3339, r.Date); err != nil {
		add("format", "date %q is not an RFC 3339 time, as the suite writes it", r.Date)
	}

	// File name and folders.
	base := filepath.Base(path)
	if want, err := ConformanceFileName(&r); err != nil {
		add("file name", "%v", strings.TrimPrefix(err.Error(), "reports: "))
	} else if base != want {
		add("file name", "%s; want %s (<API channel>-<implementation version>-<mode>-report.yaml)", base, want)
	}
	switch r.GatewayAPIChannel {
	case "standard", "experimental":
	default:
		add("channel", "gatewayAPIChannel is %q; want standard or experimental", r.GatewayAPIChannel)
	}
	if !version.IsSemantic(r.GatewayAPIVersion) {
		add("version folder", "gatewayAPIVersion is %q; want the semantic version of the Gateway API the tests ran with, e.g. v1.6.3", r.GatewayAPIVersion)
	}
	abs, _ := filepath.Abs(path)
	implDir := filepath.Dir(abs)
	versionDir := filepath.Base(filepath.Dir(implDir))
	if versionDir != r.GatewayAPIVersion {
		add("version folder", "the report is in %s/%s/; want it in %s/<implementation>/, the folder of its gatewayAPIVersion", versionDir, filepath.Base(implDir), orUnknown(r.GatewayAPIVersion))
	}

	// Implementation and mode.
	impl := r.Implementation
	if strings.TrimSpace(impl.Organization) == "" {
		add("implementation", "organization is empty; want the organization, company or person behind the project")
	}
	if strings.TrimSpace(impl.Project) == "" {
		add("implementation", "project is empty; want the project's name")
	}
	if u, err := url.Parse(impl.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("implementation", "url %q is not an http(s) URL; want the project's repository or website", impl.URL)
	}
	if !version.IsSemantic(impl.Version) {
		add("semver", "implementation.version %q is not a semantic version; want a released version or a snapshot such as v1.2.3 or v0.0.0-20260301120000-0123456789ab, never a branch name", impl.Version)
	}
	contacts := 0
	for _, c := range impl.Contact {
		if strings.TrimSpace(c) != "" {
			contacts++
		}
	}
	if contacts == 0 {
		add("implementation", "contact is empty; want GitHub handles, an email address or a support URL")
	}
	if strings.TrimSpace(r.Mode) == "" {
		add("mode", "mode is empty; want default, or the name of the setup the README's Reproduce section describes")
	}

	// Results and names.
	if len(r.ProfileReports) == 0 {
		add("results", "the report has no profiles; run with --conformance-profiles naming the profiles claimed")
	}
	for _, p := range r.ProfileReports {
		if !slices.Contains(names.Profiles, p.Name) {
			add("profiles", "%s is not an upstream profile; a report for upstream holds only %s", p.Name, strings.Join(names.Profiles, ", "))
		}
		checkResult := func(level string, s confv1.Status) {
			switch s.Result {
			case confv1.Success, confv1.Partial:
			default:
				failed := ""
				if len(s.FailedTests) > 0 {
					failed = " (failed: " + strings.Join(s.FailedTests, ", ") + ")"
				}
				add("results", "%s %s result is %q%s; want success or partial", p.Name, level, s.Result, failed)
			}
			for _, t := range append(slices.Clone(s.FailedTests), s.SkippedTests...) {
				if !slices.Contains(names.Tests, t) {
					add("tests", "%s %s names %s, which is not an upstream test", p.Name, level, t)
				}
			}
		}
		checkResult("core", p.Core)
		if p.Extended != nil {
			checkResult("extended", p.Extended.Status)
			for _, f := range append(slices.Clone(p.Extended.SupportedFeatures), p.Extended.UnsupportedFeatures...) {
				if !slices.Contains(names.Features, f) {
					add("features", "%s lists %s, which is not an upstream feature", p.Name, f)
				}
			}
		}
	}
	for _, t := range r.SucceededProvisionalTests {
		if !slices.Contains(names.Tests, t) {
			add("tests", "succeededProvisionalTests names %s, which is not an upstream test", t)
		}
	}

	findings = append(findings, verifyReadme(filepath.Join(filepath.Dir(path), SubmissionReadmeName), base, &r)...)
	return findings, nil
}

var (
	headingRe = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkRe    = regexp.MustCompile(`\[[^\]]*\]\(\./([^)\s]+)\)`)
	textLink  = regexp.MustCompile(`^\[([^\]]*)\]\([^)]*\)$`)
)

// verifyReadme checks the README.md next to a report.
func verifyReadme(path, reportFile string, r *confv1.ConformanceReport) []Finding {
	var findings []Finding
	add := func(format string, args ...any) {
		findings = append(findings, Finding{"README", fmt.Sprintf(format, args...)})
	}
	data, err := readBounded(path)
	if err != nil {
		add("%v; every implementation folder needs a README.md with a table of contents and a Reproduce section", err)
		return findings
	}
	var section string
	reproduce, reproduceText, row := false, false, false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64<<10), maxReportSize)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := headingRe.FindStringSubmatch(line); m != nil {
			section = strings.ToLower(m[1])
			if section == "reproduce" {
				reproduce = true
			}
			continue
		}
		if section == "reproduce" && line != "" {
			reproduceText = true
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		m := linkRe.FindStringSubmatch(line)
		if m == nil || m[1] != reportFile {
			continue
		}
		row = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 4 {
			add("the table row for %s has %d cells; want API channel | Implementation version | Mode | Report", reportFile, len(cells))
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		version := cells[1]
		if m := textLink.FindStringSubmatch(version); m != nil {
			version = m[1]
		}
		if cells[0] != r.GatewayAPIChannel {
			add("the table row for %s says API channel %q; the report says %q", reportFile, cells[0], r.GatewayAPIChannel)
		}
		if version != r.Implementation.Version {
			add("the table row for %s says version %q; the report says %q", reportFile, version, r.Implementation.Version)
		}
		if cells[2] != r.Mode {
			add("the table row for %s says mode %q; the report says %q", reportFile, cells[2], r.Mode)
		}
		if !strings.HasPrefix(cells[3], "[link](./") {
			add("the table row for %s links it as %q; want [link](./%s)", reportFile, cells[3], reportFile)
		}
	}
	if err := sc.Err(); err != nil {
		add("reading %s: %v", path, err)
	}
	if !row {
		add("%s has no table of contents row linking [link](./%s)", path, reportFile)
	}
	if !reproduce || !reproduceText {
		add("%s has no Reproduce section with the steps that reproduce the report", path)
	}
	return findings
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReportSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxReportSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxReportSize)
	}
	return data, nil
}

// FindReports returns the report files under each path: a file is taken
// as it is, a directory is searched for files named *-report.yaml.
func FindReports(paths []string) ([]string, error) {
	var out []string
	var errs []error
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), "-report.yaml") && d.Name() != GatewitnessReportFileName {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
		if len(out) == n && err == nil {
			errs = append(errs, fmt.Errorf("%s: no file named *-report.yaml in it", p))
		}
	}
	return out, errors.Join(errs...)
}
