package project

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// oldName is the project's working name until the rename (CHANGELOG.md),
// spelled in two parts so that this file does not hold it whole.
var oldName = []byte("gate" + "check")

// renameRecord lists the files that may still name the old name: the
// changelog's line that says why the name changed, and the script that
// changed it.
var renameRecord = map[string]bool{
	"CHANGELOG.md":                  true,
	"hack/rename-to-gatewitness.sh": true,
}

// skippedDirs are never part of the tree: git's own folder and the build
// outputs that .gitignore names.
var skippedDirs = map[string]bool{".git": true, "bin": true, "out": true, ".cache": true, "node_modules": true}

// eachTextFile calls fn with the slash path (relative to the repository's
// root) and contents of every text file of the tree.
func eachTextFile(t *testing.T, fn func(rel string, data []byte)) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skippedDirs[d.Name()] && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return nil // binary
		}
		fn(filepath.ToSlash(rel), data)
		return nil
	})
	if err != nil {
		t.Fatalf("walking the tree: %v", err)
	}
}

// TestNoOldName keeps the rename whole: no file name and no text file of
// the tree names the project's old name, in any spelling, but the rename's
// own record.
func TestNoOldName(t *testing.T) {
	eachTextFile(t, func(rel string, data []byte) {
		if renameRecord[rel] {
			return
		}
		if bytes.Contains(bytes.ToLower([]byte(rel)), oldName) {
			t.Errorf("%s: the path names the project's old name; it is %s now (git mv it)", rel, Name)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(bytes.ToLower(line), oldName) {
				t.Errorf("%s:%d: names the project's old name; it is %s now: %s", rel, i+1, Name, strings.TrimSpace(string(line)))
			}
		}
	})
}

// repoRef is any GitHub repository named like the project.
var repoRef = regexp.MustCompile(`github\.com/[A-Za-z0-9_.-]+/` + Name + `\b`)

// TestDocsNameTheProjectsHome holds every file that names the project's
// repository (docs, Makefiles, workflow templates, test data) to
// ModulePath, so that the home is written once (this package) and the
// rest agree with it.
func TestDocsNameTheProjectsHome(t *testing.T) {
	seen := 0
	eachTextFile(t, func(rel string, data []byte) {
		for _, m := range repoRef.FindAll(data, -1) {
			seen++
			if string(m) != ModulePath {
				t.Errorf("%s: names the repository %s; the project's home is %s (internal/project)", rel, m, ModulePath)
			}
		}
	})
	if seen == 0 {
		t.Fatalf("no file names %s: the walk did not reach the tree", ModulePath)
	}
}
