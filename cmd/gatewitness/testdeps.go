package main

import (
	"errors"
	"io"
	"reflect"
	"regexp"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/internal/project"
)

// The conformance suite is written against *testing.T: upstream's tests
// call t.Run, t.Parallel, t.Cleanup and friends, and only the testing
// package can make a T. `gatewitness run` therefore hosts the suite the way
// a test binary does, with testing.MainStart, which wants a value of
// testing's unexported testDeps interface (the go tool generates one for
// every test binary, in testing/internal/testdeps, which other packages
// cannot import). testDeps below is that value, for the method set of
// Go 1.26: pattern matching and profiles work; fuzzing and coverage, which
// the suite never uses, report that they are not available.

// corpusEntry spells out testing's corpusEntry, an alias of this
// anonymous struct type.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

var errNoFuzzing = errors.New("gatewitness: fuzzing is not available in the gatewitness binary")

type testDeps struct{}

var (
	matchMu  sync.Mutex
	matchPat string
	matchRe  *regexp.Regexp
)

func (testDeps) MatchString(pat, str string) (bool, error) {
	matchMu.Lock()
	defer matchMu.Unlock()
	if matchRe == nil || matchPat != pat {
		re, err := regexp.Compile(pat)
		if err != nil {
			return false, err
		}
		matchPat, matchRe = pat, re
	}
	return matchRe.MatchString(str), nil
}

func (testDeps) ImportPath() string                      { return project.ModulePath + "/cmd/" + project.Name }
func (testDeps) ModulePath() string                      { return project.ModulePath }
func (testDeps) SetPanicOnExit0(bool)                    {}
func (testDeps) StartCPUProfile(w io.Writer) error       { return pprof.StartCPUProfile(w) }
func (testDeps) StopCPUProfile()                         { pprof.StopCPUProfile() }
func (testDeps) StartTestLog(io.Writer)                  {}
func (testDeps) StopTestLog() error                      { return nil }
func (testDeps) ResetCoverage()                          {}
func (testDeps) SnapshotCoverage()                       {}
func (testDeps) CheckCorpus([]any, []reflect.Type) error { return nil }

func (testDeps) WriteProfileTo(name string, w io.Writer, debug int) error {
	p := pprof.Lookup(name)
	if p == nil {
		return errors.New("gatewitness: no profile named " + name)
	}
	return p.WriteTo(w, debug)
}

func (testDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errNoFuzzing
}

func (testDeps) RunFuzzWorker(func(corpusEntry) error) error { return errNoFuzzing }

func (testDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) { return nil, nil }

func (testDeps) InitRuntimeCoverage() (mode string, tearDown func(string, string) (string, error), snapcov func() float64) {
	return "", nil, nil
}
