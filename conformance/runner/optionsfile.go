package runner

// The options file (--options-file): upstream's conformance options file
// as YAML or JSON plus gatewitness's keys, read over the options set so far,
// with a warning for each key no field reads.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/conformance/tests"
)

// maxOptionsFileSize bounds what --options-file reads.
const maxOptionsFileSize = 1 << 20

// fileOptions is the shape of an options file: upstream's conformance
// options file (ConfigurableOptions as YAML or JSON) plus gatewitness's keys.
type fileOptions struct {
	suite.ConfigurableOptions
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
	ReportDir  string `json:"reportDir"`
	// ReportFolder names the implementation's folder under upstream/.
	ReportFolder string `json:"reportFolder"`
	// EchoImage is the echo-backend image the manifests run.
	EchoImage string `json:"echoImage"`
	// InstallSteps is Markdown: how the implementation was installed.
	InstallSteps    string `json:"installSteps"`
	TimingTolerance string `json:"timingTolerance"`
	// ConnectionTimeouts maps the ConfigMap keys (clientTimeout, ...) and
	// gatewayClassName to values (conntimeouts.go).
	ConnectionTimeouts map[string]string `json:"connectionTimeouts"`
	// RetryBudgetLoad has the keys qps, requests and shareSlack; those
	// absent keep their values.
	RetryBudgetLoad tests.RetryBudgetLoad `json:"retryBudgetLoad"`
}

// LoadOptionsFile reads an options file (YAML or JSON) over o, as
// upstream's suite reads its --conformance-options-file: its keys are
// those of upstream's options (gatewayClassName, supportedFeatures,
// timeoutConfig, implementation, ...) plus gatewitness's kubeconfig,
// context, reportDir, reportFolder, echoImage, installSteps, timingTolerance, connectionTimeouts and
// retryBudgetLoad (qps, requests, shareSlack). Keys that
// are absent leave o's values. Keys no one knows are ignored, as upstream
// ignores them, and each gets a warning in o.Warnings naming it (with the
// known key it resembles). Bad values are errors naming the key.
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
		Context:             o.Context,
		ReportDir:           o.ReportDir,
		ReportFolder:        o.ReportFolder,
		EchoImage:           o.EchoImage,
		InstallSteps:        o.InstallSteps,
		RetryBudgetLoad:     o.RetryBudgetLoad,
	}
	if err := yaml.Unmarshal(data, &fo); err != nil {
		return fmt.Errorf("options file %s: %w", path, err)
	}
	unknown, err := unknownKeys(data, reflect.TypeFor[fileOptions]())
	if err != nil {
		return fmt.Errorf("options file %s: %w", path, err)
	}
	for _, u := range unknown {
		o.Warnings = append(o.Warnings, fmt.Sprintf("options file %s: unknown key %s ignored, as upstream's suite ignores it%s", path, u.key, u.hint))
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
	o.Context = fo.Context
	o.ReportDir = fo.ReportDir
	o.ReportFolder = fo.ReportFolder
	o.EchoImage = fo.EchoImage
	o.InstallSteps = fo.InstallSteps
	o.RetryBudgetLoad = fo.RetryBudgetLoad
	if err := o.Validate(); err != nil {
		return fmt.Errorf("options file %s: %w", path, err)
	}
	return nil
}

// unknownKey is a key of an options file that no field reads.
type unknownKey struct{ key, hint string }

// unknownKeys returns the keys of the YAML or JSON document data that no
// field of t reads, as dotted paths (implementation.orgnization), in the
// document's order where it has one. Keys match fields as encoding/json
// matches them: by JSON name, ignoring case.
func unknownKeys(data []byte, t reflect.Type) ([]unknownKey, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	var out []unknownKey
	var walk func(v any, t reflect.Type, path string)
	walk = func(v any, t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			fields := jsonFields(t)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				ft, ok := lookupField(fields, k)
				if !ok {
					names := make([]string, 0, len(fields))
					for n := range fields {
						names = append(names, n)
					}
					hint := ""
					if s := suggest(k, names); s != "" {
						hint = fmt.Sprintf("; did you mean %s?", s)
					}
					out = append(out, unknownKey{key: path + k, hint: hint})
					continue
				}
				walk(m[k], ft, path+k+".")
			}
		case reflect.Slice, reflect.Array:
			if l, ok := v.([]any); ok {
				for i, e := range l {
					walk(e, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i))
				}
			}
		case reflect.Map:
			if m, ok := v.(map[string]any); ok {
				for k, e := range m {
					walk(e, t.Elem(), path+k+".")
				}
			}
		}
	}
	walk(doc, t, "")
	return out, nil
}

// jsonFields maps the JSON names of t's fields, embedded structs'
// included, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(ft))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func lookupField(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}
