package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/internal/version"
)

// UpstreamNames are profile, feature and test names of one conformance
// suite: one Gateway API release's, or gatewitness's own.
type UpstreamNames struct {
	// Profiles, Features and Tests are the profile, feature and test names.
	Profiles, Features, Tests []string
}

// Names are the names VerifySubmission checks a report's names against.
type Names struct {
	// Release returns the names of the Gateway API release a report says
	// it ran (its gatewayAPIVersion), and the release they are from; ok
	// is false when no names of that release are known.
	Release func(gatewayAPIVersion string) (names UpstreamNames, release string, ok bool)
	// Gatewitness are gatewitness's own profile, feature and test names,
	// which must never leak into a report for upstream.
	Gatewitness UpstreamNames
}

// Severity tells whether a finding stops a submission.
type Severity string

const (
	// Error is a rule upstream enforces (its hack/verify-reports.sh) or a
	// gatewitness name in a report for upstream: the report would be
	// refused.
	Error Severity = "error"
	// Warning is a departure from the guidance of upstream's
	// conformance/reports/README.md that upstream has merged all the same;
	// a reviewer may ask for it to be fixed.
	Warning Severity = "warning"
)

// Finding is one broken submission rule.
type Finding struct {
	// Severity is Error or Warning.
	Severity Severity
	// Rule names the rule: for an error, what upstream's script checks;
	// for a warning, the README's section and rule.
	Rule string
	// Message says what is wrong and what is wanted.
	Message string
}

func (f Finding) String() string { return string(f.Severity) + ": " + f.Rule + ": " + f.Message }

// Errors returns the findings of severity Error.
func Errors(findings []Finding) []Finding {
	return slices.DeleteFunc(slices.Clone(findings), func(f Finding) bool { return f.Severity != Error })
}

// maxReportSize bounds the report and README VerifySubmission reads.
const maxReportSize = 1 << 20

// The README's rules, as warnings name them.
const (
	ruleStructure = `README rule "How this folder is structured"`
	ruleFileName  = `README rule "Table of Contents: Report" (file name)`
	ruleLinkText  = `README rule "Table of Contents: Report" (link)`
	ruleTOC       = `README rule "Table of Contents"`
	ruleReproduce = `README rule "Reproduce"`
	ruleAsCreated = `README rule "Reports" (as the suite created them)`
	ruleImpl      = `README rule "Reports rules" (implementation)`
	ruleResult    = `README rule "Reports rules" (test result)`
	ruleRelease   = `README rule "Reports rules" (gatewayAPIVersion)`
)

// VerifyOptions say how reports are verified.
type VerifyOptions struct {
	// Names are the names reports are checked against.
	Names Names
	// CheckLinks fetches each README's links to the web, as upstream's
	// CI does (a dead one is an error); without it they are named in a
	// warning, as not checked.
	CheckLinks bool
	// Client fetches the links; nil means a client with LinkTimeout.
	Client *http.Client
}

// VerifySubmission checks the ConformanceReport YAML at path, in its
// folder of upstream's conformance/reports layout
// (<major.minor>/<implementation>/), and the README.md beside it, and
// returns what it finds. VerifyPaths checks folders as upstream's script
// walks them (every *.yaml of an implementation folder).
//
// Errors are what upstream's hack/verify-reports.sh enforces, as it
// judges it, and names of gatewitness's in a report for upstream:
//
//   - gatewayAPIVersion has the major.minor of its version folder, compared
//     as the script compares them (as text: "1.6.3" is not of v1.6/);
//   - gatewayAPIChannel is standard or experimental;
//   - mode is not the empty string (the script reads the field with yq,
//     which prints "null" for a missing mode: that passes, with a warning);
//   - the implementation's folder has a README.md whose links resolve, as
//     markdown-link-check has them: files, the README's own headings,
//     mail addresses, and, with CheckLinks, links to the web;
//   - no profile, feature or test name is gatewitness's (unless the
//     report's release has it too).
//
// Warnings are the rest of upstream's conformance/reports/README.md,
// which reviewers apply and upstream has merged reports without: the
// version folder named major.minor, the file name
// <channel>-<version>-<mode>-report.yaml, a README row per report that
// matches it and links [<version> report](./file), a Reproduce section,
// the implementation fields, success or partial results that agree with
// their statistics, the report as the suite wrote it, and names of the
// report's own Gateway API release.
func VerifySubmission(path string, opts VerifyOptions) ([]Finding, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	readme, findings := loadReadme(dir, opts)
	return append(findings, verifyReport(path, data, versionFolderOf(path), readme, opts.Names)...), nil
}

// versionFolderOf is the name of the version folder a report is in: its
// folder's folder.
func versionFolderOf(path string) string {
	abs, _ := filepath.Abs(path)
	return filepath.Base(filepath.Dir(filepath.Dir(abs)))
}

// loadReadme reads and checks the links of the README.md in dir; it
// returns nil and an error finding when there is none.
func loadReadme(dir string, opts VerifyOptions) ([]byte, []Finding) {
	path := filepath.Join(dir, SubmissionReadmeName)
	data, err := readBounded(path)
	if err != nil {
		return nil, []Finding{{Error, "README", fmt.Sprintf("%v; upstream's verify-reports.sh wants a README.md in every implementation folder", pathErr(err))}}
	}
	findings := checkReadmeLinks(path, data, opts.CheckLinks, opts.Client)
	if bytes.Contains(data, []byte(readmePlaceholder)) {
		findings = append(findings, Finding{Warning, ruleReproduce, "README.md still says " + readmePlaceholder + " (how the implementation was installed is not written); give the steps with gatewitness run --install-steps FILE, or write them in its place"})
	}
	return data, findings
}

// readmePlaceholder is what WriteSubmissionReadme writes where the
// installation steps go when the run was given none.
const readmePlaceholder = "**To do before submitting:**"

// verifyReport checks one *.yaml of an implementation folder whose
// README is readme (nil when it has none), in the version folder named
// versionDir.
func verifyReport(path string, data []byte, versionDir string, readme []byte, names Names) []Finding {
	var findings []Finding
	add := func(sev Severity, rule, format string, args ...any) {
		findings = append(findings, Finding{sev, rule, fmt.Sprintf(format, args...)})
	}
	if whole, why := wholeReport(data); !whole {
		add(Error, "format", "%s", why)
		return findings
	}
	base := filepath.Base(path)

	// What upstream's script checks, read as yq reads the fields.
	fields, yqErr := yqFields(data, "gatewayAPIVersion", "gatewayAPIChannel", "mode")
	gav, channel, mode := fields[0], fields[1], fields[2]
	if yqErr != nil {
		add(Error, "format", "not YAML that yq reads: %v (upstream's script then finds no gatewayAPIVersion, channel or mode)", yqErr)
	}
	where := versionDir + "/" + filepath.Base(filepath.Dir(path)) + "/"
	if scriptMajorMinor(gav) != scriptMajorMinor(versionDir) {
		add(Error, "version folder", "the report is in %s; its gatewayAPIVersion %s does not have the folder's major.minor %s (upstream's verify-reports.sh compares them as text, v included)", where, gav, scriptMajorMinor(versionDir))
	} else if majorMinor(gav) == "" {
		add(Warning, ruleAsCreated, "gatewayAPIVersion %q is not a semantic version as the suite writes it, e.g. v1.6.3", gav)
	} else if versionDir != majorMinor(gav) {
		add(Warning, ruleStructure, "the version folder is %s; upstream's folders are named major.minor: %s/", versionDir, majorMinor(gav))
	}
	channelOK := channel == "standard" || channel == "experimental"
	if !channelOK {
		add(Error, "channel", "gatewayAPIChannel is %q; want standard or experimental", channel)
	}
	switch {
	case mode == "" && yqErr == nil:
		add(Error, "mode", "mode is empty; want default, or the name of the setup the README's Reproduce section describes")
	case mode == "null":
		add(Warning, ruleAsCreated, "mode is not set (upstream's script passes it); the suite writes default when no mode is given")
	}
	if yqErr != nil || strings.Contains(gav+channel, "\n") {
		return findings
	}

	var r confv1.ConformanceReport
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		if err := yaml.Unmarshal(data, &r); err != nil {
			add(Warning, ruleAsCreated, "not a ConformanceReport: %v", err)
			return findings
		}
		add(Warning, ruleAsCreated, "not a ConformanceReport as upstream's suite writes it: %v", err)
	}
	if r.APIVersion != confv1.GroupVersion.String() || r.Kind != "ConformanceReport" {
		add(Warning, ruleAsCreated, "apiVersion %q, kind %q; the suite writes %q, %q", r.APIVersion, r.Kind, confv1.GroupVersion.String(), "ConformanceReport")
	}
	if _, err := time.Parse(time.RFC3339, r.Date); err != nil {
		add(Warning, ruleAsCreated, "date %q is not an RFC 3339 time, as the suite writes it", r.Date)
	}
	modeOK := strings.TrimSpace(r.Mode) != ""

	// The file name, when the fields it is made of are good.
	if channelOK && modeOK {
		if wantName, err := ConformanceFileName(&r); err == nil && base != wantName {
			add(Warning, ruleFileName, "the file is %s; the rule names it %s", base, wantName)
		}
	}

	// Implementation.
	impl := r.Implementation
	if strings.TrimSpace(impl.Organization) == "" {
		add(Warning, ruleImpl, "organization is empty; want the organization, company or person behind the project")
	}
	if strings.TrimSpace(impl.Project) == "" {
		add(Warning, ruleImpl, "project is empty; want the project's name")
	}
	if !isWebURL(impl.URL) {
		add(Warning, ruleImpl, "url %q is not an http(s) URL; want the project's repository or website", impl.URL)
	}
	if !version.IsSemantic(impl.Version) {
		add(Warning, ruleImpl, "version %q is not a semantic version; want a released version or a snapshot such as v1.2.3 or v0.0.0-20260301120000-0123456789ab, never a branch name", impl.Version)
	}
	if !slices.ContainsFunc(impl.Contact, func(c string) bool { return strings.TrimSpace(c) != "" }) {
		add(Warning, ruleImpl, "contact is empty; want GitHub handles, an email address or a support URL")
	}

	// Results and names.
	if len(r.ProfileReports) == 0 {
		add(Warning, ruleResult, "the report has no profiles; run with --conformance-profiles naming the profiles claimed")
	}
	check := checkNames(names, r.GatewayAPIVersion, func(sev Severity, rule, msg string) { add(sev, rule, "%s", msg) })
	for _, p := range r.ProfileReports {
		check("profile", p.Name, p.Name)
		result := func(level string, s confv1.Status) {
			switch s.Result {
			case confv1.Success, confv1.Partial:
			default:
				failed := ""
				if len(s.FailedTests) > 0 {
					failed = " (failed: " + strings.Join(s.FailedTests, ", ") + ")"
				}
				add(Warning, ruleResult, "%s %s result is %q%s; want success or partial", p.Name, level, s.Result, failed)
			}
			if msg := statisticsDisagree(s); msg != "" {
				add(Warning, ruleStatistics, "%s %s: %s", p.Name, level, msg)
			}
			for _, t := range append(slices.Clone(s.FailedTests), s.SkippedTests...) {
				check("test", t, p.Name+" "+level)
			}
		}
		result("core", p.Core)
		if p.Extended != nil {
			result("extended", p.Extended.Status)
			for _, f := range append(slices.Clone(p.Extended.SupportedFeatures), p.Extended.UnsupportedFeatures...) {
				check("feature", f, p.Name)
			}
		}
	}
	for _, t := range r.SucceededProvisionalTests {
		check("test", t, "succeededProvisionalTests")
	}

	if readme != nil {
		findings = append(findings, verifyReadmeRow(readme, filepath.Join(filepath.Dir(path), SubmissionReadmeName), base, &r, channelOK, modeOK)...)
	}
	return findings
}

// ruleStatistics names the check of a result against its statistics,
// which upstream's script does not make.
const ruleStatistics = "result and statistics"

// statisticsDisagree says how a status's result disagrees with its
// statistics and test lists, as upstream's suite computes the result
// (failure when a test failed, else partial when one was skipped, else
// success), or returns "".
func statisticsDisagree(s confv1.Status) string {
	var want confv1.Result
	switch {
	case s.Failed > 0:
		want = confv1.Failure
	case s.Skipped > 0:
		want = confv1.Partial
	default:
		want = confv1.Success
	}
	var why []string
	if s.Result != want {
		why = append(why, fmt.Sprintf("result %q with statistics Passed: %d, Failed: %d, Skipped: %d; the suite writes %q for those", s.Result, s.Passed, s.Failed, s.Skipped, want))
	}
	if n := len(s.FailedTests); n != int(s.Failed) {
		why = append(why, fmt.Sprintf("Failed: %d but %d failedTests", s.Failed, n))
	}
	if n := len(s.SkippedTests); n != int(s.Skipped) {
		why = append(why, fmt.Sprintf("Skipped: %d but %d skippedTests", s.Skipped, n))
	}
	return strings.Join(why, "; ")
}

// yqFields returns top-level fields of a YAML file as `yq eval .KEY`
// prints them (yq v4): a scalar's text ("" for an empty value), "null"
// for a key a mapping does not have, "" for a document that is not a
// mapping, the documents of a multi-document file joined by "---" lines.
func yqFields(data []byte, keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for docs := 0; ; docs++ {
		var doc yamlv3.Node
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			return make([]string, len(keys)), err
		}
		for i, k := range keys {
			v := ""
			if len(doc.Content) == 1 && doc.Content[0].Kind == yamlv3.MappingNode {
				v = "null"
				m := doc.Content[0].Content
				for j := 0; j+1 < len(m); j += 2 {
					if m[j].Value == k {
						v = yqScalar(m[j+1])
					}
				}
			}
			if docs > 0 {
				out[i] += "\n---\n"
			}
			out[i] += v
		}
	}
	return out, nil
}

// yqScalar is how yq prints a value: a scalar as its text (an empty
// value as ""), an alias as what it names, anything else as not one
// value.
func yqScalar(n *yamlv3.Node) string {
	if n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yamlv3.ScalarNode {
		return "<" + n.Tag + ">"
	}
	return n.Value
}

// scriptMajorMinor is the major.minor upstream's script takes of a
// version or a folder's name: of each line, the leading v?MAJOR.MINOR as
// written (its sed), or the whole line when it has none.
func scriptMajorMinor(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if m := scriptMajorMinorRe.FindString(l); m != "" {
			lines[i] = m
		}
	}
	return strings.Join(lines, "\n")
}

var scriptMajorMinorRe = regexp.MustCompile(`^v?[0-9]+\.[0-9]+`)

// checkNames returns a function that checks one name of a report of the
// release gatewayAPIVersion: a gatewitness name is an error, a name the
// release does not have a warning; each name is reported once.
func checkNames(names Names, gatewayAPIVersion string, report func(sev Severity, rule, msg string)) func(kind, name, where string) {
	var rel UpstreamNames
	release, known := "", false
	if names.Release != nil {
		rel, release, known = names.Release(gatewayAPIVersion)
	}
	if !known && names.Release != nil {
		report(Warning, ruleRelease, fmt.Sprintf("gatewitness knows no names of Gateway API %s; only gatewitness's own names are looked for", gatewayAPIVersion))
	}
	seen := map[string]bool{}
	return func(kind, name, where string) {
		if seen[kind+"/"+name] {
			return
		}
		seen[kind+"/"+name] = true
		var in, ours []string
		switch kind {
		case "profile":
			in, ours = rel.Profiles, names.Gatewitness.Profiles
		case "feature":
			in, ours = rel.Features, names.Gatewitness.Features
		default:
			in, ours = rel.Tests, names.Gatewitness.Tests
		}
		switch {
		case slices.Contains(in, name):
		case slices.Contains(ours, name):
			report(Error, "gatewitness names", fmt.Sprintf("%s names the %s %s, which is gatewitness's, not upstream's: a report for upstream holds only upstream's names (gatewitness's go to gatewitness-report.yaml)", where, kind, name))
		case known:
			report(Warning, ruleRelease, fmt.Sprintf("%s names the %s %s, which Gateway API %s does not have", where, kind, name, release))
		}
	}
}

// majorMinor returns "vMAJOR.MINOR" of a version or a version folder's
// name (v1.6, v1.6.3, 1.6.3-rc.1), or "" when it is neither.
func majorMinor(v string) string {
	m := majorMinorRe.FindStringSubmatch(v)
	if m == nil {
		return ""
	}
	return "v" + m[1]
}

var majorMinorRe = regexp.MustCompile(`^v?([0-9]+\.[0-9]+)(\.[0-9]+([-+].*)?)?$`)

func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

var (
	headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// mdLinkRe matches an inline link or image: [text](target "title").
	mdLinkRe = regexp.MustCompile(`!?\[((?:[^\]\\]|\\.)*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
)

// verifyReadmeRow checks the README.md at path, whose text is data, for
// the report reportFile: its table row, and a Reproduce section.
func verifyReadmeRow(data []byte, path, reportFile string, r *confv1.ConformanceReport, channelOK, modeOK bool) []Finding {
	var findings []Finding
	add := func(sev Severity, rule, format string, args ...any) {
		findings = append(findings, Finding{sev, rule, fmt.Sprintf(format, args...)})
	}
	// section is the heading the line is under; a heading of a lower
	// level (### Steps under ## Reproduce) stays in its section.
	var section string
	sectionLevel := 0
	reproduce, reproduceText, row := false, false, false
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64<<10), maxReportSize)
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			inFence = !inFence
		}
		if inFence {
			if section == "reproduce" && line != "" {
				reproduceText = true
			}
			continue
		}
		if m := headingRe.FindStringSubmatch(line); m != nil {
			level, title := len(m[1]), strings.ToLower(m[2])
			if strings.HasPrefix(title, "reproduc") {
				section, sectionLevel, reproduce = "reproduce", level, true
			} else if section == "" || level <= sectionLevel {
				section, sectionLevel = title, level
			}
			continue
		}
		if section == "reproduce" && line != "" {
			reproduceText = true
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := splitRow(line)
		reportCell := -1
		for i, c := range cells {
			for _, m := range mdLinkRe.FindAllStringSubmatch(c, -1) {
				if t, ok := localTarget(m[2]); ok && t == reportFile {
					reportCell = i
				}
			}
		}
		if reportCell < 0 {
			continue
		}
		row = true
		if len(cells) < 4 {
			add(Warning, ruleTOC, "the row for %s has %d cells; the rule wants API channel | Implementation version | Mode | Report", reportFile, len(cells))
			continue
		}
		if channelOK && cells[0] != r.GatewayAPIChannel {
			add(Warning, ruleTOC, "the row for %s says API channel %q; the report says %q", reportFile, cells[0], r.GatewayAPIChannel)
		}
		v := cells[1]
		if m := mdLinkRe.FindStringSubmatch(v); m != nil {
			v = unescape(m[1])
		}
		if !sameVersion(v, r.Implementation.Version) {
			add(Warning, ruleTOC, "the row for %s says implementation version %q; the report says %q", reportFile, v, r.Implementation.Version)
		}
		if modeOK && cells[2] != r.Mode {
			add(Warning, ruleTOC, "the row for %s says mode %q; the report says %q", reportFile, cells[2], r.Mode)
		}
		if m := mdLinkRe.FindStringSubmatch(cells[reportCell]); m != nil && !isReportLinkText(unescape(m[1]), r.Implementation.Version) {
			add(Warning, ruleLinkText, "the row for %s links it as [%s]; the rule asks for [%s report](./%s)", reportFile, m[1], r.Implementation.Version, reportFile)
		}
	}
	if err := sc.Err(); err != nil {
		add(Error, "README", "reading %s: %v", path, err)
	}
	if !row {
		add(Warning, ruleTOC, "README.md has no table row linking ./%s; the rule wants a row for each report", reportFile)
	}
	if !reproduce || !reproduceText {
		add(Warning, ruleReproduce, "README.md has no Reproduce section with the steps that reproduce the report")
	}
	return findings
}

// localTarget returns a link target's file path when it points to a file
// (not a web address, a mail address or an anchor of the same page).
func localTarget(t string) (string, bool) {
	if t == "" || strings.HasPrefix(t, "#") {
		return "", false
	}
	if u, err := url.Parse(t); err != nil || u.Scheme != "" || u.Host != "" {
		return "", false
	}
	t, _, _ = strings.Cut(t, "#")
	t, _, _ = strings.Cut(t, "?")
	if p, err := url.PathUnescape(t); err == nil {
		t = p
	}
	return strings.TrimPrefix(t, "./"), t != ""
}

// splitRow splits a Markdown table row into its trimmed, unescaped
// cells; "\|" inside a cell does not split it.
func splitRow(line string) []string {
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			b.WriteByte(line[i])
			b.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, b.String())
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	cells = append(cells, b.String())
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
		if !mdLinkRe.MatchString(cells[i]) {
			cells[i] = unescape(cells[i])
		}
	}
	return cells
}

// unescape removes Markdown's backslash escapes.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sameVersion reports whether a and b are the same version, with or
// without a leading "v".
func sameVersion(a, b string) bool {
	return strings.TrimPrefix(strings.TrimSpace(a), "v") == strings.TrimPrefix(strings.TrimSpace(b), "v")
}

// isReportLinkText reports whether text is "<version> report".
func isReportLinkText(text, version string) bool {
	v, ok := strings.CutSuffix(strings.TrimSpace(text), " report")
	return ok && sameVersion(v, version)
}

// pathErr shortens a file error to the path and the cause.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
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

// wholeReport says whether data is a whole report, not an empty file or
// one cut short: upstream's suite always writes profiles, last, so a
// report without the key was cut before its end (or never was one).
func wholeReport(data []byte) (bool, string) {
	if len(bytes.TrimSpace(data)) == 0 {
		return false, "the report is empty; want the ConformanceReport YAML upstream's suite writes"
	}
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return true, "" // the parse below names the error
	}
	if _, ok := keys["profiles"]; !ok {
		return false, "the report is truncated or not a ConformanceReport: it has no profiles, which upstream's suite writes last in every report"
	}
	return true, ""
}
