package site

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gatewitness/gatewitness/reports"
)

// A history folder holds one folder per run, named by the run's ID, with
// the run record inside:
//
//	history/
//	  20261121T020000Z-gatewitness-reference-gateway-default-in-process/run.json
//	  20261121T020412Z-gatewitness-reference-gateway-default-localcp-gatewitness/run.json
//
// A run record is all the site needs: every page is built from it, so a
// newer gatewitness can build the site of old runs again.

// MaxHistoryRuns is the most runs ReadHistory reads; prune an older
// history with Prune (gatewitness publish --keep).
const MaxHistoryRuns = 5000

// Entry is one run of a history.
type Entry struct {
	// ID names the run in the history and in the site's addresses:
	// its start time (UTC) and its series' slug.
	ID string
	// Series is the slug of the implementation, mode and target the run
	// belongs to (see SeriesOf).
	Series string
	// Run is the run record.
	Run *reports.Run
}

// History is the runs of a history folder, oldest first.
type History struct {
	Entries []*Entry
	// Problems are the folders of the history whose run could not be
	// read (no run.json, a truncated one): left out of the site, which
	// lists them, and of nothing else.
	Problems []Problem
}

// Problem is a run of a history that could not be read.
type Problem struct {
	// ID is the run's folder in the history.
	ID string `json:"id"`
	// Err says what is wrong with it.
	Err string `json:"error"`
}

func (p Problem) String() string { return p.ID + ": " + p.Err }

// TargetLabel names what a run ran against, in a few words that stay the
// same from night to night: "in-process" for the embedded reference
// gateway; on a cluster, the kubeconfig context (the local control plane's
// is "localcp") and the GatewayClass; then the Gateway API release
// (major.minor) and channel of its CRDs, when the run records them, so a
// nightly's matrix over releases and channels keeps a series per cell.
func TargetLabel(run *reports.Run) string {
	t := run.Target
	where := "in-process"
	if !t.InProcess {
		where = t.Context
		if where == "" {
			where = hostOf(t.Server)
		}
		if where == "" {
			where = "cluster"
		}
		if t.GatewayClass != "" {
			where += " · " + t.GatewayClass
		}
	}
	if api := gatewayAPILabel(run.Environment); api != "" {
		where += " · " + api
	}
	return where
}

// gatewayAPILabel is "v1.6 experimental" for Gateway API v1.6.x's
// experimental channel, "" when the run does not say.
func gatewayAPILabel(env reports.Environment) string {
	v := env.GatewayAPIVersion
	if parts := strings.SplitN(v, ".", 3); len(parts) == 3 {
		v = parts[0] + "." + parts[1]
	}
	return strings.TrimSpace(v + " " + env.GatewayAPIChannel)
}

func hostOf(server string) string {
	s := server
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	s, _, _ = strings.Cut(s, "/")
	return s
}

// SeriesOf is the slug of the series run belongs to: the runs of one
// implementation (organization and project), in one mode, against one
// target. The site lines up a series' runs night after night.
func SeriesOf(run *reports.Run) string {
	im := run.Implementation
	return slug(strings.Join([]string{im.Organization, im.Project, run.Mode, TargetLabel(run)}, "-"))
}

var notSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug lowers s and turns every run of other characters into one "-".
func slug(s string) string {
	s = strings.Trim(notSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 100 {
		s = strings.TrimRight(s[:100], "-")
	}
	if s == "" {
		return "unnamed"
	}
	return s
}

// idTime is the layout of the time in a run ID.
const idTime = "20060102T150405Z"

// RunID is the name of run in a history: its start time in UTC and its
// series, e.g. "20261121T020000Z-gatewitness-reference-gateway-default-in-process".
func RunID(run *reports.Run) string {
	return run.Started.UTC().Format(idTime) + "-" + SeriesOf(run)
}

var validID = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[a-z0-9-]+$`)

// AddRun copies the run record at path into the history folder dir (made
// if needed) as <ID>/run.json and returns the ID. A run already in the
// history with the same record is left as it is; one with the same ID and
// a different record is an error, so nothing recorded is lost. The run's
// folder appears whole or not at all: it is written as a temporary folder
// beside it and renamed into place, so a full disk or a kill leaves the
// history as it was (and a folder of the ID left without its run.json by
// an older gatewitness is replaced).
func AddRun(dir, path string) (string, error) {
	data, err := readLimited(path)
	if err != nil {
		return "", err
	}
	run, err := reports.ReadRunJSON(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if run.Started.IsZero() {
		return "", fmt.Errorf("%s: the run record has no start time (started); the history orders runs by it", path)
	}
	id := RunID(run)
	dest := filepath.Join(dir, id)
	if old, err := os.ReadFile(filepath.Join(dest, reports.RunFileName)); err == nil {
		if bytes.Equal(old, data) {
			return id, nil
		}
		return "", fmt.Errorf("%s: the history already holds a different run %s (%s)", path, id, filepath.Join(dest, reports.RunFileName))
	}
	if err := addFolder(dir, dest, data); err != nil {
		return "", fmt.Errorf("adding %s to the history: %w", path, err)
	}
	return id, nil
}

// addFolder writes data as run.json of a temporary folder in dir, synced,
// and renames the folder to dest (replacing an empty folder there).
func addFolder(dir, dest string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".add-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	f, err := os.OpenFile(filepath.Join(tmp, reports.RunFileName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	// An empty folder of the ID (an older gatewitness made the folder
	// before the record) goes; os.Remove removes none that holds a file.
	if err := os.Remove(dest); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s is there and not empty, without a readable run.json: move it away: %w", dest, err)
	}
	return os.Rename(tmp, dest)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, reports.MaxRunJSON+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > reports.MaxRunJSON {
		return nil, fmt.Errorf("%s: larger than %d bytes, the most a run record may be", path, reports.MaxRunJSON)
	}
	return data, nil
}

// ReadHistory reads every run of the history folder dir. Folders whose
// names are not run IDs are ignored; a run whose record cannot be read (a
// folder without run.json, a truncated record) is left out and listed in
// Problems, so that one bad folder never stops the site. The runs come
// back oldest first.
func ReadHistory(dir string) (*History, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the history: %w", err)
	}
	h := &History{}
	for _, e := range ents {
		if !e.IsDir() || !validID.MatchString(e.Name()) {
			continue
		}
		if len(h.Entries) == MaxHistoryRuns {
			return nil, fmt.Errorf("the history %s holds more than %d runs; keep fewer with gatewitness publish --keep N", dir, MaxHistoryRuns)
		}
		path := filepath.Join(dir, e.Name(), reports.RunFileName)
		data, err := readLimited(path)
		if err != nil {
			h.Problems = append(h.Problems, Problem{ID: e.Name(), Err: err.Error()})
			continue
		}
		run, err := reports.ReadRunJSON(bytes.NewReader(data))
		if err != nil {
			h.Problems = append(h.Problems, Problem{ID: e.Name(), Err: fmt.Sprintf("%s: %v", path, err)})
			continue
		}
		h.Entries = append(h.Entries, &Entry{ID: e.Name(), Series: SeriesOf(run), Run: run})
	}
	h.sort()
	return h, nil
}

// LockHistory takes the lock of the history folder dir (an exclusive
// flock of dir/.lock, made if needed), waiting for a publish that holds
// it, so that two publishes never interleave their adds, prunes and
// builds. The returned function releases it.
func LockHistory(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("locking the history: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the history: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the history %s: %w", dir, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lockFileName is the history's lock file; not a run ID, so never read as
// a run.
const lockFileName = ".lock"

// NewHistory returns a history of runs held in memory, as ReadHistory
// would return it had they been added to a folder.
func NewHistory(runs ...*reports.Run) (*History, error) {
	h := &History{}
	seen := map[string]bool{}
	for _, r := range runs {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		e := &Entry{ID: RunID(r), Series: SeriesOf(r), Run: r}
		if seen[e.ID] {
			return nil, fmt.Errorf("two runs have the ID %s", e.ID)
		}
		seen[e.ID] = true
		h.Entries = append(h.Entries, e)
	}
	h.sort()
	return h, nil
}

func (h *History) sort() {
	slices.SortStableFunc(h.Entries, func(a, b *Entry) int {
		return cmp.Or(a.Run.Started.Compare(b.Run.Started), cmp.Compare(a.ID, b.ID))
	})
}

// Prune removes from the history folder dir all but the newest keep runs
// of each series, and returns the IDs removed. keep must be at least 1.
func Prune(dir string, keep int) ([]string, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep is %d; want at least 1 run per series", keep)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the history: %w", err)
	}
	// IDs start with the time, so by name is by age within a series.
	bySeries := map[string][]string{}
	for _, e := range ents {
		if e.IsDir() && validID.MatchString(e.Name()) {
			series := e.Name()[len(idTime)+1:]
			bySeries[series] = append(bySeries[series], e.Name())
		}
	}
	var removed []string
	for _, ids := range bySeries {
		slices.Sort(ids)
		for _, id := range ids[:max(0, len(ids)-keep)] {
			if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
				return removed, fmt.Errorf("pruning the history: %w", err)
			}
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	return removed, nil
}

// night formats a run's start for people: "2026-11-21 02:00:07 UTC".
func night(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") }
