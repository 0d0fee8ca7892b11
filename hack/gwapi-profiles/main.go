// Command gwapi-profiles prints the results of the upstream conformance
// profiles (GATEWAY-HTTP, GATEWAY-GRPC, ...) from the ConformanceReport
// YAML files of a report directory, as make test-gwapi-v1.7 shows them:
// per profile the core and extended results, the tests that failed and the
// core tests that were skipped. gatewitness's own profiles are left out.
//
//	go run ./hack/gwapi-profiles out/reports/reference
//
// It reads upstream's report type, so it builds against every Gateway API
// release gatewitness does.
package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/features"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gwapi-profiles REPORT-DIR")
		os.Exit(2)
	}
	n, err := printDir(os.Stdout, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwapi-profiles:", err)
		os.Exit(1)
	}
	if n == 0 {
		fmt.Fprintf(os.Stderr, "gwapi-profiles: no ConformanceReport in %s\n", os.Args[1])
		os.Exit(1)
	}
}

// printDir prints every ConformanceReport YAML file under dir (gatewitness
// writes the upstream one under upstream/<major.minor>/<implementation>/) and
// returns how many it found.
func printDir(w io.Writer, dir string) (int, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return n, err
		}
		var r confv1.ConformanceReport
		if err := yaml.Unmarshal(data, &r); err != nil || r.Kind != "ConformanceReport" {
			continue // another YAML file
		}
		n++
		fmt.Fprintf(w, "%s: Gateway API %s (%s channel), mode %s\n", f, r.GatewayAPIVersion, r.GatewayAPIChannel, r.Mode)
		for _, p := range r.ProfileReports {
			if prof, ok := features.LookupProfile(p.Name); ok && !prof.Upstream {
				continue
			}
			fmt.Fprintf(w, "  %-14s core: %s", p.Name, status(p.Core))
			if p.Extended != nil {
				fmt.Fprintf(w, "; extended: %s", status(p.Extended.Status))
			}
			fmt.Fprintln(w)
			failed := p.Core.FailedTests
			if p.Extended != nil {
				failed = append(failed, p.Extended.FailedTests...)
			}
			if len(failed) > 0 {
				fmt.Fprintf(w, "  %-14s failed: %s\n", "", strings.Join(failed, ", "))
			}
			if len(p.Core.SkippedTests) > 0 {
				fmt.Fprintf(w, "  %-14s core skipped: %s\n", "", strings.Join(p.Core.SkippedTests, ", "))
			}
		}
	}
	return n, nil
}

func status(s confv1.Status) string {
	return fmt.Sprintf("%s (%d passed, %d failed, %d skipped)", s.Result, s.Passed, s.Failed, s.Skipped)
}
