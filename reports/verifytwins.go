package reports

// One implementation, one folder: upstream's tree keeps every report of an
// implementation in one folder per version (envoy-gateway, kgateway, ...),
// whatever its organization and project are called, so a report written
// to "<organization>-<project>" beside the folder upstream already has
// would open a second one.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// maxTwinReports bounds how many reports implementationTwins reads.
const maxTwinReports = 10000

// implementationTwins returns a warning for each implementation folder of
// the version folders dirs whose reports name the same organization and
// project as those of a folder named otherwise (in the same version
// folder or another one of the tree), naming the other folder and
// --report-folder.
func implementationTwins(versionDirs []string) []Checked {
	type impl struct{ org, project string }
	folders := map[impl][]string{} // implementation -> folder paths
	names := map[impl][]string{}   // implementation -> distinct folder names
	read := 0
	for _, v := range versionDirs {
		entries, _ := os.ReadDir(v)
		for _, e := range entries {
			dir := filepath.Join(v, e.Name())
			if strings.HasPrefix(e.Name(), ".") || !isDir(dir) {
				continue
			}
			reports, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			seen := map[impl]bool{}
			for _, r := range reports {
				if read++; read > maxTwinReports {
					break
				}
				i, ok := reportImplementation(r)
				k := impl{strings.ToLower(i.Organization), strings.ToLower(i.Project)}
				if !ok || k.org == "" || k.project == "" || seen[k] {
					continue
				}
				seen[k] = true
				folders[k] = append(folders[k], dir)
				if !slices.Contains(names[k], e.Name()) {
					names[k] = append(names[k], e.Name())
				}
			}
		}
	}
	var out []Checked
	for k, dirs := range folders {
		if len(names[k]) < 2 {
			continue
		}
		for _, dir := range dirs {
			own := filepath.Base(dir)
			others := slices.DeleteFunc(slices.Clone(names[k]), func(n string) bool { return n == own })
			out = append(out, Checked{dir, []Finding{{Warning, ruleStructure, fmt.Sprintf(
				"the reports here name organization %q and project %q, as those in folder %s do; upstream keeps one folder per implementation: write the report there (gatewitness run --report-folder %s)",
				k.org, k.project, strings.Join(others, ", "), others[0])}}})
		}
	}
	slices.SortFunc(out, func(a, b Checked) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// reportImplementation reads the implementation of a ConformanceReport
// file; ok is false when the file is not one.
func reportImplementation(path string) (confv1.Implementation, bool) {
	f, err := os.Open(path)
	if err != nil {
		return confv1.Implementation{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReportSize+1))
	if err != nil || len(data) > maxReportSize {
		return confv1.Implementation{}, false
	}
	var r confv1.ConformanceReport
	if err := yaml.Unmarshal(data, &r); err != nil {
		return confv1.Implementation{}, false
	}
	return r.Implementation, true
}
