package runner

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	// The upstream suite's flags, registered on flag.CommandLine. The
	// runner takes their names, defaults and help from there, so that
	// `gatewitness run` accepts every flag upstream's suite accepts, as
	// upstream defines it (TestEveryUpstreamFlagIsAccepted checks it).
	upstreamflags "sigs.k8s.io/gateway-api/conformance/utils/flags"

	"github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/reports"
)

// upstreamStringFlags and upstreamBoolFlags list the upstream suite's flags
// (sigs.k8s.io/gateway-api/conformance/utils/flags) with what gatewitness
// adds to upstream's help. Their defaults and help come from upstream's
// package; the runner parses their values itself, to check them and name
// the flag in an error, into the same ConfigurableOptions field upstream's
// package sets.
var upstreamStringFlags = []struct{ name, note string }{
	{"gateway-class", ""},
	{"mesh-name", ""},
	{"supported-features", "see gatewitness features; in-process, the reference gateway's by default; on a cluster, read from the GatewayClass's status when no feature flag is given"},
	{"exempt-features", ""},
	{"namespace-labels", ""},
	{"namespace-annotations", ""},
	{"skip-tests", "ShortNames, as gatewitness tests lists them"},
	{"run-test", "a ShortName, as gatewitness tests lists them, or several, comma-separated (those whose features are claimed run)"},
	{"mode", "it names the report file"},
	{"conformance-profiles", "e.g. GATEWAY-HTTP,GATEWITNESS-HTTP-RESILIENCE; upstream profiles go to the upstream report, GATEWITNESS-* ones to the gatewitness report"},
	{"report-output", "the upstream ConformanceReport YAML, as upstream's suite writes it"},
	{"organization", identityNote},
	{"project", identityNote},
	{"url", identityNote + "; an http or https URL"},
	{"version", identityNote + "; a semantic version such as v1.2.3"},
	{"contact", identityNote},
	{"usable-address", "an IP address or hostname"},
	{"unusable-address", "an IP address or hostname"},
	{"timeout-config-overrides", `e.g. "CreateTimeout:120;MaxTimeToConsistency:45s"; whole seconds, as upstream takes them, or a Go duration`},
}

var upstreamBoolFlags = []string{
	"debug",
	"cleanup-base-resources",
	"cleanup-test-resources",
	"all-features",
	"allow-crds-mismatch",
	"skip-provisional-tests",
	"disable-parallel-tests",
	"fail-fast",
}

// upstreamOptionsFileFlag is upstream's name of the options file flag.
const upstreamOptionsFileFlag = "conformance-options-file"

const identityNote = "for the report; on a cluster only, since in-process runs report on the reference gateway"

// identityFlags name the implementation under test.
var identityFlags = []string{"organization", "project", "url", "version", "contact"}

// gatewitnessStringFlags are gatewitness's own flags.
var gatewitnessStringFlags = []struct{ name, def, usage string }{
	{"kubeconfig", "", "kubeconfig of the cluster to test (without it, $KUBECONFIG; without both, or with --in-process, the in-process reference gateway)"},
	{"context", "", "the kubeconfig context to use, instead of its current context"},
	{"report-dir", "", "directory to write the reports to: the upstream submission (upstream/<major.minor>/<implementation>/), gatewitness-report.yaml, junit.xml, summary.md, summary-short.md and run.json"},
	{"report-folder", "", "the implementation's folder under upstream/<major.minor>/ in --report-dir, when upstream's tree names it otherwise than <organization>-<project> (e.g. envoy-gateway); lower-case letters, digits and inner -"},
	{"echo-image", tests.DefaultEchoImage(), "the echo-backend image the tests' manifests run (every " + tests.ManifestEchoImage + " of the manifests is rewritten to it); by default the release's image for a release build, :dev otherwise; the repository must end in /echo-backend"},
	{"install-steps", "", "a Markdown file saying how the implementation under test was installed and configured, for the Reproduce section of the upstream report's README (the options file's key: installSteps, the Markdown itself)"},
	{"timing-tolerance", tests.DefaultTimingTolerance.String(), "how late a timed behaviour may be and still pass, as a Go duration from 500ms to 2s (e.g. 1500ms on a loaded machine); no verdict changes within that range"},
	{"connection-timeouts", "", connectionTimeoutsUsage},
	{"retry-budget-load-qps", strconv.Itoa(tests.DefaultRetryBudgetLoad().QPS),
		"the rate of the retry-budget load tests, " + retryBudgetLoadQPSForm},
	{"retry-budget-load-requests", strconv.Itoa(tests.DefaultRetryBudgetLoad().Requests),
		"how many requests each retry-budget load test sends: " + retryBudgetLoadRequestsForm},
	{"retry-budget-share-slack", strconv.FormatFloat(tests.DefaultRetryBudgetLoad().ShareSlack, 'g', -1, 64),
		"how far the share of requests retried may stray, each way, from what budget.percent allows in BackendRetryBudgetUnderLoad: " +
			retryBudgetShareSlackForm},
}

// upstreamFlag returns the upstream suite's definition of a flag, or nil.
func upstreamFlag(name string) *flag.Flag {
	_ = upstreamflags.DefaultMode // the import registers the flags
	return flag.CommandLine.Lookup(name)
}

// RegisterFlags defines the runner's flags on fs: every flag of the
// upstream suite, with upstream's defaults and help, plus gatewitness's
// (--kubeconfig, --context, --in-process, --report-dir,
// --timing-tolerance, --connection-timeouts, the --retry-budget-load-*
// and --retry-budget-share-slack options, and --options-file, which
// is upstream's --conformance-options-file). After fs.Parse, the returned
// function builds the Options: DefaultOptions, then the options file if
// one is named, then the flags given on the command line, then the
// target: --in-process, else --kubeconfig, else $KUBECONFIG, else
// in-process. A bad value is an error naming the flag and the accepted
// form.
func RegisterFlags(fs *flag.FlagSet) func() (Options, error) {
	str := map[string]*string{}
	boolean := map[string]*bool{}
	for _, f := range upstreamStringFlags {
		def, usage := "", f.note
		if uf := upstreamFlag(f.name); uf != nil {
			def, usage = uf.DefValue, joinUsage(uf.Usage, f.note)
		}
		str[f.name] = fs.String(f.name, def, usage)
	}
	for _, name := range upstreamBoolFlags {
		def, usage := false, ""
		if uf := upstreamFlag(name); uf != nil {
			def, _ = strconv.ParseBool(uf.DefValue)
			usage = uf.Usage
		}
		boolean[name] = fs.Bool(name, def, usage)
	}
	for _, f := range gatewitnessStringFlags {
		str[f.name] = fs.String(f.name, f.def, f.usage)
	}
	inProcess := fs.Bool("in-process", false, "run against the in-process reference gateway, even if $KUBECONFIG is set")
	optionsUsage := "path of a YAML or JSON options file: upstream's conformance options keys plus gatewitness's (kubeconfig, context, reportDir, reportFolder, echoImage, installSteps, timingTolerance, connectionTimeouts, retryBudgetLoad); flags override it"
	if uf := upstreamFlag(upstreamOptionsFileFlag); uf != nil {
		optionsUsage = joinUsage(uf.Usage, "gatewitness's keys too: kubeconfig, context, reportDir, reportFolder, echoImage, installSteps, timingTolerance, connectionTimeouts, retryBudgetLoad; keys it does not know are ignored with a warning, as upstream ignores them")
	}
	optionsFile := fs.String(upstreamOptionsFileFlag, "", optionsUsage)
	fs.StringVar(optionsFile, "options-file", "", "the same as --"+upstreamOptionsFileFlag)

	return func() (Options, error) {
		o := DefaultOptions()
		if *optionsFile != "" {
			if err := LoadOptionsFile(*optionsFile, &o); err != nil {
				return Options{}, err
			}
			if o.Kubeconfig != "" {
				o.KubeconfigSource = "kubeconfig in " + *optionsFile
			}
		}
		var errs []error
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) {
			set[f.Name] = true
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
		if len(errs) == 0 && (set["retry-budget-load-qps"] || set["retry-budget-load-requests"]) {
			l := o.RetryBudgetLoad
			if err := tests.CheckRetryBudgetLoadRequests(l.Requests, l.QPS); err != nil {
				errs = append(errs, fmt.Errorf("flag --retry-budget-load-requests: %w", err))
			}
		}
		if set["kubeconfig"] {
			o.KubeconfigSource = "--kubeconfig"
		}
		if err := errors.Join(errs...); err != nil {
			return Options{}, err
		}
		if err := chooseTarget(&o, *inProcess, set); err != nil {
			return Options{}, err
		}
		return o, nil
	}
}

// chooseTarget picks the target as Kubernetes tools do: --kubeconfig (or
// the options file's), else $KUBECONFIG; --in-process overrides both, and
// with none of them the run is in-process.
func chooseTarget(o *Options, inProcess bool, set map[string]bool) error {
	if inProcess {
		if o.Kubeconfig != "" && o.KubeconfigSource != "" {
			return fmt.Errorf("--in-process and %s name two targets; give one", o.KubeconfigSource)
		}
		if o.Context != "" {
			return errors.New("--context selects a kubeconfig context; an --in-process run has none")
		}
		o.Kubeconfig, o.KubeconfigSource = "", ""
	} else if o.Kubeconfig == "" {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			o.Kubeconfig, o.KubeconfigSource = env, "KUBECONFIG"
		}
	}
	if o.Kubeconfig != "" {
		return nil
	}
	if o.Context != "" {
		return errors.New("--context needs a kubeconfig: give --kubeconfig or set $KUBECONFIG")
	}
	var given []string
	for _, name := range identityFlags {
		if set[name] {
			given = append(given, "--"+name)
		}
	}
	if len(given) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(given, ", "), errIdentityInProcess)
	}
	return nil
}

// errIdentityInProcess says why an in-process run takes no identity.
var errIdentityInProcess = errors.New("these name the implementation under test, but this run is in-process: " +
	"it tests gatewitness's reference gateway, and its reports name the reference gateway. " +
	"To test and report on your implementation, name its cluster with --kubeconfig or $KUBECONFIG")

func joinUsage(upstream, note string) string {
	upstream = strings.TrimSuffix(strings.TrimSpace(upstream), ".")
	if note == "" {
		return upstream
	}
	if upstream == "" {
		return note
	}
	return upstream + " (" + note + ")"
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
		o.RunTest = strings.TrimSpace(v)
		err = checkRunTest(o.RunTest)
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
	case "context":
		o.Context = v
	case "report-dir":
		o.ReportDir = v
	case "report-folder":
		err = reports.CheckReportFolder(v)
		o.ReportFolder = v
	case "echo-image":
		err = tests.CheckEchoImage(v)
		o.EchoImage = v
	case "install-steps":
		o.InstallSteps, err = readInstallSteps(v)
	case "timing-tolerance":
		o.TimingTolerance, err = parseTolerance(v)
	case "connection-timeouts":
		o.ConnectionTimeouts, err = parseConnectionTimeouts(o.ConnectionTimeouts, v)
	case "retry-budget-load-qps":
		o.RetryBudgetLoad.QPS, err = parseRetryBudgetLoadQPS(v)
	case "retry-budget-load-requests":
		o.RetryBudgetLoad.Requests, err = parseRetryBudgetLoadRequests(v)
	case "retry-budget-share-slack":
		o.RetryBudgetLoad.ShareSlack, err = parseRetryBudgetShareSlack(v)
	}
	return err
}

// readInstallSteps reads the Markdown file --install-steps names.
func readInstallSteps(path string) (string, error) {
	if path == "" {
		return "", errors.New("empty; want the path of a Markdown file with the steps that installed the implementation")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w; want the path of a Markdown file with the steps that installed the implementation", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, reports.MaxInstallSteps+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > reports.MaxInstallSteps {
		return "", fmt.Errorf("%s is larger than %d bytes; want the install steps only", path, reports.MaxInstallSteps)
	}
	return string(data), nil
}
