package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Checked is one file or folder verified and what was found in it.
type Checked struct {
	// Path is the report, README or folder the findings are about.
	Path string
	// Findings are what is wrong with it; none when it is good.
	Findings []Finding
}

// Failed reports whether any of the checked has an error: upstream's
// script would fail.
func Failed(checked []Checked) bool {
	return slices.ContainsFunc(checked, func(c Checked) bool { return len(Errors(c.Findings)) > 0 })
}

// VerifyPaths verifies each path as upstream's hack/verify-reports.sh
// walks its conformance/reports folder:
//
//   - a file is one report, checked with the README.md beside it;
//   - a folder named as a version (v1.6) is a version folder: each entry
//     in it is an implementation folder, a file there included (the
//     script finds no README.md in it);
//   - a folder holding version folders is a reports tree: each folder in
//     it is a version folder, except those the script passes over, of
//     releases before v1.1;
//   - any other folder is an implementation folder: it must hold a
//     README.md whose links resolve, and every *.yaml in it (not only
//     *-report.yaml; none in its subfolders) is checked as a report.
//
// A path that cannot be read is an error returned beside what the other
// paths gave.
func VerifyPaths(paths []string, opts VerifyOptions) ([]Checked, error) {
	var out []Checked
	var errs []error
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case !fi.IsDir():
			findings, err := VerifySubmission(p, opts)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if before, ok := scriptSkips(versionFolderOf(p)); ok {
				findings = []Finding{notChecked(before)}
			}
			out = append(out, Checked{p, findings})
		case versionNameRe.MatchString(filepath.Base(filepath.Clean(p))):
			out = append(out, verifyVersionFolder(p, opts)...)
			out = append(out, implementationTwins([]string{p})...)
		case holdsVersionFolders(p):
			c, err := verifyReportsTree(p, opts)
			out = append(out, c...)
			if err != nil {
				errs = append(errs, err)
			}
		default:
			versionDir := filepath.Base(filepath.Dir(absPath(p)))
			if before, skip := scriptSkips(versionDir); skip {
				out = append(out, Checked{p, []Finding{notChecked(before)}})
				continue
			}
			out = append(out, verifyImplementationFolder(p, versionDir, opts)...)
		}
	}
	return out, errors.Join(errs...)
}

// versionNameRe matches the name of a version folder: v1.6, 1.6, v1.6.3.
var versionNameRe = regexp.MustCompile(`^v?[0-9]+\.[0-9]+`)

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// holdsVersionFolders reports whether dir holds a folder named as a
// version.
func holdsVersionFolders(dir string) bool {
	entries, _ := os.ReadDir(dir)
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool {
		return versionNameRe.MatchString(e.Name()) && isDir(filepath.Join(dir, e.Name()))
	})
}

// isDir reports whether path is a folder, following symbolic links as
// the script's [[ -d ]] does.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// scriptSkips reports whether upstream's script passes over a version
// folder of this name: it checks those from v1.1.0 on, ordering names as
// `sort -V` does (a name that does not begin with a number is checked),
// and returns the release it was before.
func scriptSkips(name string) (string, bool) {
	v := strings.TrimPrefix(name, "v")
	if majorMinorOnlyRe.MatchString(v) {
		v += ".0"
	}
	m := leadingNumbersRe.FindString(v)
	if m == "" {
		return "", false
	}
	var nums []int
	for _, f := range strings.Split(m, ".") {
		n, _ := strconv.Atoi(f)
		nums = append(nums, n)
	}
	return "v1.1.0", slices.Compare(nums, []int{1, 1, 0}) < 0
}

var (
	majorMinorOnlyRe = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	leadingNumbersRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*`)
)

func notChecked(before string) Finding {
	return Finding{Warning, ruleStructure, fmt.Sprintf("not checked: upstream's verify-reports.sh passes over version folders of releases before %s", before)}
}

// verifyReportsTree verifies each version folder of a reports tree
// (upstream's conformance/reports); files in it are passed over, as the
// script does.
func verifyReportsTree(root string, opts VerifyOptions) ([]Checked, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Checked
	var versions []string
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if strings.HasPrefix(e.Name(), ".") || !isDir(p) {
			continue
		}
		if before, skip := scriptSkips(e.Name()); skip {
			out = append(out, Checked{p, []Finding{notChecked(before)}})
			continue
		}
		out = append(out, verifyVersionFolder(p, opts)...)
		versions = append(versions, p)
	}
	return append(out, implementationTwins(versions)...), nil
}

// verifyVersionFolder verifies each entry of a version folder as an
// implementation folder.
func verifyVersionFolder(dir string, opts VerifyOptions) []Checked {
	name := filepath.Base(absPath(dir))
	if before, skip := scriptSkips(name); skip {
		return []Checked{{dir, []Finding{notChecked(before)}}}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []Checked{{dir, []Finding{{Error, "format", err.Error()}}}}
	}
	var out []Checked
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if !isDir(p) {
			out = append(out, Checked{p, []Finding{{Error, "README", fmt.Sprintf("%s is a file in the version folder %s; upstream's verify-reports.sh takes each entry of a version folder as an implementation folder, and finds no README.md in it", e.Name(), name)}}})
			continue
		}
		out = append(out, verifyImplementationFolder(p, name, opts)...)
	}
	if len(entries) == 0 {
		out = append(out, Checked{dir, nil})
	}
	return out
}

// verifyImplementationFolder verifies an implementation folder in the
// version folder named versionDir: its README.md and every *.yaml in it.
func verifyImplementationFolder(dir, versionDir string, opts VerifyOptions) []Checked {
	readme, findings := loadReadme(dir, opts)
	var out []Checked
	if readme == nil {
		out = append(out, Checked{dir, findings})
	} else {
		out = append(out, Checked{filepath.Join(dir, SubmissionReadmeName), findings})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	n := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") || isDir(f) {
			continue
		}
		n++
		data, err := readBounded(f)
		if err != nil {
			out = append(out, Checked{f, []Finding{{Error, "format", err.Error()}}})
			continue
		}
		out = append(out, Checked{f, verifyReport(f, data, versionDir, readme, opts.Names)})
	}
	if n == 0 {
		out = append(out, Checked{dir, []Finding{{Error, "format", "no *.yaml in the implementation folder; upstream's verify-reports.sh checks every *.yaml in it and fails when there is none"}}})
	}
	return out
}
