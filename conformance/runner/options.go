package runner

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/validate/content"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"

	"github.com/gatecheck/gatecheck/conformance/inprocess/pods"
	"github.com/gatecheck/gatecheck/conformance/tests"
	"github.com/gatecheck/gatecheck/features"
	"github.com/gatecheck/gatecheck/gateway/dataplane"
)

// Defaults, the same as the upstream suite's flags.
const (
	// DefaultGatewayClassName is the GatewayClass the suite uses unless
	// told otherwise.
	DefaultGatewayClassName = "gateway-conformance"
	// DefaultMode is the implementation's operating mode unless told
	// otherwise.
	DefaultMode = "default"
)

// MaxTimingTolerance is the largest --timing-tolerance accepted.
const MaxTimingTolerance = time.Minute

// maxOptionsFileSize bounds what --options-file reads.
const maxOptionsFileSize = 1 << 20

// Options configures a run. The embedded upstream ConfigurableOptions are
// the options of the upstream suite, with the same flags and the same
// options-file keys; the other fields are gatecheck's.
type Options struct {
	suite.ConfigurableOptions

	// Kubeconfig is the path of a kubeconfig whose current context is the
	// cluster to test. Empty means the in-process reference gateway.
	Kubeconfig string
	// ReportDir, when set, is the directory the ConformanceReport YAML
	// (named as the Gateway API project requires), the JUnit XML and the
	// Markdown summary are written to. It is created if missing.
	ReportDir string
	// TimingTolerance is how late a timed behaviour may be and still pass;
	// gatecheck's tests read it with tests.TimingTolerance.
	TimingTolerance time.Duration
	// ConnectionTimeouts are the connection-level timeouts the connection
	// timeout tests expect (and the class of their Gateway); gatecheck's
	// tests read them with tests.ExpectedConnectionTimeouts.
	ConnectionTimeouts tests.ConnectionTimeouts

	// ReferenceGateway changes the in-process reference gateway. Go tests
	// use it to run the suite against a deliberately broken gateway and show
	// that the right tests fail. It is ignored on a cluster.
	ReferenceGateway ReferenceGateway

	// Progress, when set, gets one line per test as it finishes: its
	// result, its ShortName and how long it took.
	Progress io.Writer
	// Logger receives the in-process cluster's logs; the zero value
	// discards them.
	Logger logr.Logger
	// TestLog, when set, returns the log a test wrote, for the report's
	// failure message. The CLI sets it from the test output it captures;
	// without it, a failure's message says where the log is.
	TestLog func(shortName string) string
}

// ReferenceGateway holds the hooks that break the in-process reference
// gateway on purpose, for negative checks.
type ReferenceGateway struct {
	// MutateConfig changes every routing snapshot before the data plane
	// gets it (for example: Retry = nil turns retries off).
	MutateConfig func(*dataplane.Config)
	// DataPlane changes the data plane's options before it starts (for
	// example: the GRPCTimeoutFaults knobs).
	DataPlane func(*dataplane.Options)
	// Pods changes the in-process pod runner's options before it starts
	// (for example: a probe proxy that answers every TCP probe).
	Pods func(*pods.Options)
}

// DefaultOptions returns the options a run has when nothing is set: the
// upstream suite's defaults plus gatecheck's.
func DefaultOptions() Options {
	return Options{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     DefaultGatewayClassName,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			Mode:                 DefaultMode,
			TimeoutConfig:        config.DefaultTimeoutConfig(),
		},
		TimingTolerance:    tests.DefaultTimingTolerance,
		ConnectionTimeouts: tests.DefaultConnectionTimeouts(),
	}
}

// fileOptions is the shape of an options file: upstream's conformance
// options file (ConfigurableOptions as YAML or JSON) plus gatecheck's keys.
type fileOptions struct {
	suite.ConfigurableOptions
	Kubeconfig      string `json:"kubeconfig"`
	ReportDir       string `json:"reportDir"`
	TimingTolerance string `json:"timingTolerance"`
	// ConnectionTimeouts maps the ConfigMap keys (clientTimeout, ...) and
	// gatewayClassName to values (conntimeouts.go).
	ConnectionTimeouts map[string]string `json:"connectionTimeouts"`
}

// LoadOptionsFile reads an options file (YAML or JSON) over o. Its keys are
// those of upstream's conformance options file (gatewayClassName,
// supportedFeatures, timeoutConfig, implementation, ...) plus kubeconfig,
// reportDir and timingTolerance. Keys that are absent leave o's values;
// unknown keys and bad values are errors naming the key.
func LoadOptionsFile(path string, o *Options) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("options file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxOptionsFileSize+1))
	if err != nil {
		return fmt.Errorf("options file %s: %w", path, err)
	}
	if len(data) > maxOptionsFileSize {
		return fmt.Errorf("options file %s: larger than %d bytes", path, maxOptionsFileSize)
	}
	fo := fileOptions{
		ConfigurableOptions: o.ConfigurableOptions,
		Kubeconfig:          o.Kubeconfig,
		ReportDir:           o.ReportDir,
	}
	if err := yaml.UnmarshalStrict(data, &fo); err != nil {
		return fmt.Errorf("options file %s: %w", path, err)
	}
	// The file's timeoutConfig replaces only the durations it names (see
	// config.TimeoutConfig.UnmarshalJSON), so the defaults stay for others.
	if fo.TimingTolerance != "" {
		d, err := parseTolerance(fo.TimingTolerance)
		if err != nil {
			return fmt.Errorf("options file %s: timingTolerance: %w", path, err)
		}
		o.TimingTolerance = d
	}
	if len(fo.ConnectionTimeouts) > 0 {
		ct, err := tests.ParseConnectionTimeouts(o.ConnectionTimeouts, fo.ConnectionTimeouts)
		if err != nil {
			return fmt.Errorf("options file %s: connectionTimeouts: %w", path, err)
		}
		o.ConnectionTimeouts = ct
	}
	o.ConfigurableOptions = fo.ConfigurableOptions
	o.Kubeconfig = fo.Kubeconfig
	o.ReportDir = fo.ReportDir
	if err := o.Validate(); err != nil {
		return fmt.Errorf("options file %s: %w", path, err)
	}
	return nil
}

// Validate checks options however they were set, naming the options-file
// key of a bad value. Flags are checked as they are parsed, with errors
// naming the flag.
func (o *Options) Validate() error {
	var errs []error
	check := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	check("gatewayClassName", checkObjectName(o.GatewayClassName, false))
	check("meshName", checkObjectName(o.MeshName, true))
	check("supportedFeatures", checkFeatures(o.SupportedFeatures))
	check("exemptFeatures", checkFeatures(o.ExemptFeatures))
	check("conformanceProfiles", checkProfiles(o.ConformanceProfiles))
	check("skipTests", checkTestNames(o.SkipTests))
	if o.RunTest != "" {
		check("runTest", checkTestNames([]string{o.RunTest}))
	}
	check("mode", checkFileNamePart(o.Mode, false))
	check("implementation.version", checkFileNamePart(o.Implementation.Version, true))
	check("implementation.url", checkURL(o.Implementation.URL))
	check("namespaceLabels", checkKeyValues(o.NamespaceLabels, true))
	check("namespaceAnnotations", checkKeyValues(o.NamespaceAnnotations, false))
	if o.TimingTolerance <= 0 || o.TimingTolerance > MaxTimingTolerance {
		check("timingTolerance", fmt.Errorf("%v is out of range; want a duration above 0 and at most %v, such as 500ms", o.TimingTolerance, MaxTimingTolerance))
	}
	return errors.Join(errs...)
}

// RegisterFlags defines the runner's flags on fs: every flag of the
// upstream suite plus --kubeconfig, --report-dir, --timing-tolerance and
// --options-file. After fs.Parse, the returned function builds the
// Options: DefaultOptions, then the options file if one is named, then the
// flags given on the command line. A bad value is an error naming the flag
// and the accepted form.
func RegisterFlags(fs *flag.FlagSet) func() (Options, error) {
	str := map[string]*string{}
	boolean := map[string]*bool{}
	for _, f := range stringFlags {
		str[f.name] = fs.String(f.name, f.def, f.usage)
	}
	for _, f := range boolFlags {
		boolean[f.name] = fs.Bool(f.name, f.def, f.usage)
	}
	// Upstream names the options file --conformance-options-file.
	optionsFile := fs.String("options-file", "", "path of a YAML or JSON file of options (upstream's conformance options keys plus kubeconfig, reportDir, timingTolerance); flags override it")
	fs.StringVar(optionsFile, "conformance-options-file", "", "the same as --options-file, as the upstream suite names it")

	return func() (Options, error) {
		o := DefaultOptions()
		if *optionsFile != "" {
			if err := LoadOptionsFile(*optionsFile, &o); err != nil {
				return Options{}, err
			}
		}
		var errs []error
		fs.Visit(func(f *flag.Flag) {
			var err error
			switch {
			case str[f.Name] != nil:
				err = applyString(&o, f.Name, *str[f.Name])
			case boolean[f.Name] != nil:
				applyBool(&o, f.Name, *boolean[f.Name])
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("flag --%s: %w", f.Name, err))
			}
		})
		if err := errors.Join(errs...); err != nil {
			return Options{}, err
		}
		return o, nil
	}
}

type stringFlag struct{ name, def, usage string }

type boolFlag struct {
	name  string
	def   bool
	usage string
}

// stringFlags and boolFlags are the upstream suite's flags (same names,
// defaults and meaning; see sigs.k8s.io/gateway-api/conformance/utils/flags)
// and gatecheck's own.
var stringFlags = []stringFlag{
	{"gateway-class", DefaultGatewayClassName, "name of the GatewayClass the tests use"},
	{"mesh-name", "", "name of the XMesh the mesh tests use"},
	{"supported-features", "", "comma-separated features the implementation supports (see `gatecheck features`); in-process, the reference gateway's by default"},
	{"exempt-features", "", "comma-separated features to leave out of the run"},
	{"namespace-labels", "", "comma-separated name=value labels to add to the test namespaces"},
	{"namespace-annotations", "", "comma-separated name=value annotations to add to the test namespaces"},
	{"skip-tests", "", "comma-separated ShortNames of tests to skip"},
	{"run-test", "", "ShortName of the one test to run, instead of the whole suite"},
	{"mode", DefaultMode, "the implementation's operating mode, as named in the report"},
	{"conformance-profiles", "", "comma-separated conformance profiles to report on, e.g. GATEWAY-HTTP,GATEWAY-GRPC"},
	{"report-output", "", "file to write the ConformanceReport YAML to, as the upstream suite does"},
	{"organization", "", "the implementation's organization, for the report"},
	{"project", "", "the implementation's project, for the report"},
	{"url", "", "the implementation's URL (http or https), for the report"},
	{"version", "", "the implementation's version, for the report and its file name"},
	{"contact", "", "comma-separated contacts of the implementation's maintainers, for the report"},
	{"usable-address", "", "an address (IP or hostname) Gateways may request, for GatewayStaticAddresses"},
	{"unusable-address", "", "an address (IP or hostname) Gateways may not get, for GatewayStaticAddresses"},
	{"timeout-config-overrides", "", "semicolon-separated Name:value timeout overrides, e.g. \"CreateTimeout:120;MaxTimeToConsistency:45s\" (value in seconds or a Go duration)"},
	{"kubeconfig", "", "kubeconfig of the cluster to test; empty runs the in-process reference gateway"},
	{"report-dir", "", "directory to write the ConformanceReport YAML, JUnit XML and Markdown summary to"},
	{"timing-tolerance", tests.DefaultTimingTolerance.String(), "how late a timed behaviour may be and still pass, as a Go duration (e.g. 500ms, 2s; at most 1m)"},
	{"connection-timeouts", "", connectionTimeoutsUsage},
}

var boolFlags = []boolFlag{
	{"debug", false, "print the requests and responses of the tests"},
	{"cleanup-base-resources", true, "delete the base resources (namespaces, Gateways, backends) after the run"},
	{"cleanup-test-resources", true, "delete each test's resources after the test"},
	{"all-features", false, "treat every feature as supported"},
	{"allow-crds-mismatch", false, "run even if the installed CRDs' version or channel differ from the suite's"},
	{"skip-provisional-tests", false, "skip tests marked provisional"},
	{"disable-parallel-tests", false, "run tests marked parallel one at a time"},
	{"fail-fast", false, "stop the run at the first failed test"},
}

func applyBool(o *Options, name string, v bool) {
	switch name {
	case "debug":
		o.Debug = v
	case "cleanup-base-resources":
		o.CleanupBaseResources = v
	case "cleanup-test-resources":
		o.CleanupTestResources = v
	case "all-features":
		o.EnableAllSupportedFeatures = v
	case "allow-crds-mismatch":
		o.AllowCRDsMismatch = v
	case "skip-provisional-tests":
		o.SkipProvisionalTests = v
	case "disable-parallel-tests":
		o.DisableParallelTests = v
	case "fail-fast":
		o.FailFast = v
	}
}

func applyString(o *Options, name, v string) error {
	var err error
	switch name {
	case "gateway-class":
		err = checkObjectName(v, false)
		o.GatewayClassName = v
	case "mesh-name":
		err = checkObjectName(v, true)
		o.MeshName = v
	case "supported-features":
		o.SupportedFeatures, err = parseFeatures(v)
	case "exempt-features":
		o.ExemptFeatures, err = parseFeatures(v)
	case "namespace-labels":
		o.NamespaceLabels, err = parseKeyValues(v, true)
	case "namespace-annotations":
		o.NamespaceAnnotations, err = parseKeyValues(v, false)
	case "skip-tests":
		o.SkipTests, err = parseList(v, "test ShortNames, e.g. HTTPRouteSimpleSameNamespace,GatewayInvalidTLSConfiguration")
		if err == nil {
			err = checkTestNames(o.SkipTests)
		}
	case "run-test":
		o.RunTest = v
		if v != "" {
			err = checkTestNames([]string{v})
		}
	case "mode":
		err = checkFileNamePart(v, false)
		o.Mode = v
	case "conformance-profiles":
		o.ConformanceProfiles, err = parseProfiles(v)
	case "report-output":
		o.ReportOutputPath = v
	case "organization":
		o.Implementation.Organization = v
	case "project":
		o.Implementation.Project = v
	case "url":
		err = checkURL(v)
		o.Implementation.URL = v
	case "version":
		err = checkFileNamePart(v, true)
		o.Implementation.Version = v
	case "contact":
		o.Implementation.Contact = nil
		if v != "" {
			o.Implementation.Contact, err = parseList(v, "contacts, e.g. @alice,https://example.com/team")
		}
	case "usable-address":
		o.UsableNetworkAddresses, err = parseAddress(v)
	case "unusable-address":
		o.UnusableNetworkAddresses, err = parseAddress(v)
	case "timeout-config-overrides":
		err = applyTimeoutOverrides(&o.TimeoutConfig, v)
	case "kubeconfig":
		o.Kubeconfig = v
	case "report-dir":
		o.ReportDir = v
	case "timing-tolerance":
		o.TimingTolerance, err = parseTolerance(v)
	case "connection-timeouts":
		o.ConnectionTimeouts, err = parseConnectionTimeouts(o.ConnectionTimeouts, v)
	}
	return err
}

// parseList splits a comma-separated list; an empty element is an error.
func parseList(v, form string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%q has an empty element; want comma-separated %s", v, form)
		}
		parts[i] = p
	}
	return parts, nil
}

func parseFeatures(v string) ([]features.FeatureName, error) {
	parts, err := parseList(v, "feature names, e.g. Gateway,HTTPRoute")
	if err != nil {
		return nil, err
	}
	out := make([]features.FeatureName, len(parts))
	for i, p := range parts {
		out[i] = features.FeatureName(p)
	}
	return out, checkFeatures(out)
}

func checkFeatures(fs []features.FeatureName) error {
	for _, f := range fs {
		if _, ok := features.Lookup(f); !ok {
			return fmt.Errorf("unknown feature %q; want feature names as `gatecheck features` lists them, e.g. HTTPRouteRequestTimeout", f)
		}
	}
	return nil
}

func parseProfiles(v string) ([]suite.ConformanceProfileName, error) {
	parts, err := parseList(v, "profile names, e.g. GATEWAY-HTTP,GATEWAY-GRPC")
	if err != nil {
		return nil, err
	}
	out := make([]suite.ConformanceProfileName, len(parts))
	for i, p := range parts {
		out[i] = suite.ConformanceProfileName(p)
	}
	return out, checkProfiles(out)
}

func checkProfiles(ps []suite.ConformanceProfileName) error {
	for _, p := range ps {
		if _, ok := features.LookupProfile(string(p)); !ok {
			var names []string
			for _, known := range features.Profiles() {
				names = append(names, known.Name)
			}
			return fmt.Errorf("unknown conformance profile %q; want some of %s", p, strings.Join(names, ", "))
		}
	}
	return nil
}

func checkTestNames(names []string) error {
	known := map[string]bool{}
	for _, t := range AllTests() {
		known[t.ShortName] = true
	}
	for _, n := range names {
		if !known[n] {
			return fmt.Errorf("no test has the ShortName %q; want ShortNames as `gatecheck tests` lists them, e.g. HTTPRouteSimpleSameNamespace", n)
		}
	}
	return nil
}

// parseKeyValues parses "k=v,k2=v2". Label keys and values must be valid
// Kubernetes labels; annotation keys must be valid keys.
func parseKeyValues(v string, labels bool) (map[string]string, error) {
	form := "name=value pairs, e.g. team=gateway,env=ci"
	parts, err := parseList(v, form)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(parts))
	for _, p := range parts {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%q has no '='; want comma-separated %s", p, form)
		}
		m[k] = val
	}
	return m, checkKeyValues(m, labels)
}

func checkKeyValues(m map[string]string, labels bool) error {
	for k, v := range m {
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			return fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; "))
		}
		if labels {
			if msgs := content.IsLabelValue(v); len(msgs) > 0 {
				return fmt.Errorf("value %q of %s: %s", v, k, strings.Join(msgs, "; "))
			}
		}
	}
	return nil
}

func checkObjectName(v string, emptyOK bool) error {
	if v == "" && emptyOK {
		return nil
	}
	if msgs := content.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return fmt.Errorf("%q is not a Kubernetes object name: %s", v, strings.Join(msgs, "; "))
	}
	return nil
}

// checkFileNamePart checks a value that names the report file.
func checkFileNamePart(v string, emptyOK bool) error {
	const form = `letters, digits and ". _ + -", not starting with "." (it names the report file)`
	if v == "" {
		if emptyOK {
			return nil
		}
		return fmt.Errorf("empty; want %s", form)
	}
	if v[0] == '.' {
		return fmt.Errorf("%q starts with '.'; want %s", v, form)
	}
	for _, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '+' || r == '-'
		if !ok {
			return fmt.Errorf("%q has %q; want %s", v, r, form)
		}
	}
	return nil
}

func checkURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http or https URL; want e.g. https://github.com/example/gateway", v)
	}
	return nil
}

func parseAddress(v string) ([]gwv1.GatewaySpecAddress, error) {
	if v == "" {
		return nil, nil
	}
	if _, err := netip.ParseAddr(v); err == nil {
		return []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: v}}, nil
	}
	if msgs := content.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return nil, fmt.Errorf("%q is neither an IP address nor a hostname; want e.g. 192.0.2.10 or gw.example.com", v)
	}
	return []gwv1.GatewaySpecAddress{{Type: new(gwv1.HostnameAddressType), Value: v}}, nil
}

func parseTolerance(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxTimingTolerance {
		return 0, fmt.Errorf("%q is not a duration above 0 and at most %v; want a Go duration such as 500ms or 2s", v, MaxTimingTolerance)
	}
	return d, nil
}

// applyTimeoutOverrides applies "Name:value;Name:value" to tc, where Name is
// a field of config.TimeoutConfig and value is whole seconds (as upstream
// accepts) or a Go duration; RequiredConsecutiveSuccesses takes a count.
// Unlike upstream, which ignores what it cannot parse, a bad pair is an
// error.
func applyTimeoutOverrides(tc *config.TimeoutConfig, v string) error {
	const form = `semicolon-separated Name:value pairs, e.g. "CreateTimeout:120;MaxTimeToConsistency:45s"`
	if v == "" {
		return nil
	}
	rv := reflect.ValueOf(tc).Elem()
	for pair := range strings.SplitSeq(v, ";") {
		name, val, ok := strings.Cut(pair, ":")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return fmt.Errorf("%q is not Name:value; want %s", pair, form)
		}
		sf, ok := rv.Type().FieldByName(name)
		if !ok || !sf.IsExported() {
			return fmt.Errorf("%q is not a timeout; want a field of the upstream TimeoutConfig such as CreateTimeout or MaxTimeToConsistency", name)
		}
		field := rv.FieldByIndex(sf.Index)
		if sf.Type == reflect.TypeFor[time.Duration]() {
			d, err := parseSeconds(val)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			field.SetInt(int64(d))
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("%s: %q is not a count from 1 to 1000", name, val)
		}
		field.SetInt(int64(n))
	}
	return nil
}

func parseSeconds(v string) (time.Duration, error) {
	const limit = 24 * time.Hour
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > int(limit/time.Second) {
			return 0, fmt.Errorf("%d seconds is out of range; want 0 to %d", n, int(limit/time.Second))
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > limit {
		return 0, fmt.Errorf("%q is neither whole seconds nor a Go duration up to %v; want e.g. 30 or 1m30s", v, limit)
	}
	return d, nil
}
