// Command perf measures the throughput of gatewitness's HTTP echo backend side
// by side with two peers, fortio's echo server and upstream's echo-basic,
// and with a floor: the least a net/http server answering a fixed JSON
// echo costs (./hack/perf/floor).
//
//	go run ./hack/perf [-duration 3s] [-reps 3] [-conns 8] [-pin=true] [-out file.md] [-only re] [-cpuprofile dir]
//
// It builds the servers with the go command of the current module
// (./cmd/echo-backend, fortio.org/fortio/echosrv,
// sigs.k8s.io/gateway-api/conformance/echo-basic and ./hack/perf/floor),
// starts each as its own process on a loopback port (ours twice: with its
// default request log, one line per echo on standard output as echo-basic
// prints, and with -quiet), and drives every scenario with one load
// generator that runs in this process: fortio's periodic runner and fast
// HTTP/1.1 client at maximum speed, with a fixed number of keep-alive
// connections for a fixed duration. Scenarios run interleaved (all
// scenarios once, then all again, -reps times), so that a noisy neighbour
// slows every server alike rather than one of them.
//
// When taskset is available and the machine has at least two CPUs, the
// servers are pinned to CPU 0 (so each runs with GOMAXPROCS=1) and this
// process, the load generator, to CPU 1 with GOMAXPROCS=1.
//
// The result is a Markdown table on standard output (or -out): per scenario
// the median of the runs' QPS (with min and max), the median of their p50
// and p99 latencies, the server's CPU time per request and the requests
// that did not get the expected status, followed by how each server was
// run (whether it logs a line per request, in particular).
// With -baseline, ./cmd/echo-backend is also built from that commit (from
// `git archive`, with the same module cache) and every scenario of ours
// runs against it too, right after the same scenario on the working tree,
// so a change can be measured before and after in one interleaved run.
//
// With -cpuprofile, our two servers are ./hack/perf/echoprof instead
// (the same HTTP handler, writing a CPU profile of itself), and their
// profiles are left in the directory as gatewitness.pprof and
// gatewitness-quiet.pprof.
//
// The whole run is bounded: the command refuses settings whose load alone
// exceeds 150s and gives up after 4 minutes.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/gatewitness/gatewitness/internal/childproc"
	"github.com/gatewitness/gatewitness/internal/tailbuf"
)

// Bounds of one invocation.
const (
	maxLoad     = 150 * time.Second // scenarios × reps × duration
	runDeadline = 4 * time.Minute   // everything, builds included
	readyWithin = 15 * time.Second  // a server must answer this soon after start
)

// config is what the flags set.
type config struct {
	duration time.Duration  // of one run
	reps     int            // runs of each scenario
	conns    int            // keep-alive connections (load goroutines)
	pin      bool           // pin servers and load generator with taskset
	out      string         // Markdown output file; "" for stdout
	only     *regexp.Regexp // runs only the scenarios whose "server scenario" matches; nil for all
	profile  string         // directory for our servers' CPU profiles; "" for none
	baseline string         // commit to build a second copy of ours from; "" for none
}

// check validates c against the number of scenarios it will run.
func (c config) check(scenarios int) error {
	switch {
	case c.duration < 100*time.Millisecond || c.duration > 30*time.Second:
		return fmt.Errorf("-duration=%v: accepted: from 100ms to 30s", c.duration)
	case c.reps < 1 || c.reps > 10:
		return fmt.Errorf("-reps=%d: accepted: from 1 to 10", c.reps)
	case c.conns < 1 || c.conns > 256:
		return fmt.Errorf("-conns=%d: accepted: from 1 to 256", c.conns)
	}
	if load := time.Duration(scenarios*c.reps) * c.duration; load > maxLoad {
		return fmt.Errorf("-reps=%d × -duration=%v × %d scenarios = %v of load: accepted: at most %v",
			c.reps, c.duration, scenarios, load, maxLoad)
	}
	return nil
}

// server is one echo server under test.
type server struct {
	name   string                         // table label
	pkg    string                         // what `go build` builds
	args   func(port int) []string        // command line
	env    func(port, spare int) []string // extra environment
	health string                         // path that answers once the server is up
	note   string                         // how it runs, for the report: logging, version
	// fromCommit, if set, builds pkg from that commit of this repository
	// instead of the working tree (-baseline).
	fromCommit string

	bin  string
	base string // "http://127.0.0.1:port"
	cmd  *exec.Cmd
	logs *tailbuf.Buffer
	done chan struct{} // closed when the process exits
}

// scenario is one row of the table.
type scenario struct {
	srv    *server
	name   string
	path   string // request URI; "{uuid}" is replaced per request by the client
	header string // "Name: value" sent with every request, or ""
	want   int    // expected status
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of one load run")
	flag.IntVar(&cfg.reps, "reps", 3, "runs of each scenario, interleaved")
	flag.IntVar(&cfg.conns, "conns", 8, "keep-alive connections of the load generator")
	flag.BoolVar(&cfg.pin, "pin", true, "pin the servers to CPU 0 and the load generator to CPU 1 with taskset")
	flag.StringVar(&cfg.out, "out", "", "write the Markdown report to this file instead of standard output")
	flag.StringVar(&cfg.baseline, "baseline", "", "also run our scenarios against ./cmd/echo-backend built at this commit")
	flag.StringVar(&cfg.profile, "cpuprofile", "", "run our servers as ./hack/perf/echoprof, writing their CPU profiles to this directory")
	only := flag.String("only", "", "run only the scenarios whose \"server scenario\" label matches this regular expression")
	flag.Parse()
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fatalf("-only=%q: accepted: a Go regular expression: %v", *only, err)
		}
		cfg.only = re
	}
	if flag.NArg() > 0 {
		fatalf("unexpected arguments %q: accepted: flags only (see -help)", flag.Args())
	}
	if err := run(cfg); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "perf: "+format+"\n", args...)
	os.Exit(1)
}

func run(cfg config) error {
	oursArgs := func(port int) []string {
		return []string{"-host", "127.0.0.1", "-http-port", strconv.Itoa(port),
			"-h2c-port=", "-https-port=", "-tcp-port="}
	}
	ours := &server{
		name:   "gatewitness",
		pkg:    "./cmd/echo-backend",
		args:   oursArgs,
		health: "/health",
		note:   "HTTP port only; request log on (its default): one line per echo on standard output, which this command reads through a pipe",
	}
	quiet := &server{
		name:   "gatewitness -quiet",
		pkg:    "./cmd/echo-backend",
		args:   func(port int) []string { return append(oursArgs(port), "-quiet") },
		health: "/health",
		note:   "the same binary with -quiet: no request log",
	}
	fortio := &server{
		name:   "fortio",
		pkg:    "fortio.org/fortio/echosrv",
		args:   func(port int) []string { return []string{"-port", "127.0.0.1:" + strconv.Itoa(port)} },
		health: "/",
		note:   "fortio " + fortioVersion() + "; logs nothing per request",
	}
	basic := &server{
		name: "echo-basic",
		pkg:  "sigs.k8s.io/gateway-api/conformance/echo-basic",
		// echo-basic binds ":port" (all interfaces) and always opens an
		// h2c port too; the load only goes to the loopback address.
		env: func(port, spare int) []string {
			return []string{"HTTP_PORT=" + strconv.Itoa(port), "H2C_PORT=" + strconv.Itoa(spare)}
		},
		health: "/health",
		note:   "always logs one line per echo on standard output, which this command reads through a pipe",
	}
	floor := &server{
		name:   "net/http floor",
		pkg:    "./hack/perf/floor",
		args:   func(port int) []string { return []string{"-addr", "127.0.0.1:" + strconv.Itoa(port)} },
		health: "/",
		note:   "a fixed 368-byte JSON body with Content-Type and X-Content-Type-Options, one Write, nothing read, no state, no log",
	}
	if cfg.baseline != "" {
		if cfg.profile != "" {
			return errors.New("-baseline with -cpuprofile: accepted: one of them at a time")
		}
		out, err := exec.Command("git", "rev-parse", "--short", "--verify", cfg.baseline+"^{commit}").Output()
		if err != nil {
			return fmt.Errorf("-baseline=%s: accepted: a commit of this repository (git rev-parse: %v)", cfg.baseline, err)
		}
		cfg.baseline = strings.TrimSpace(string(out))
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return fmt.Errorf("-cpuprofile=%s: %w", cfg.profile, err)
		}
		for _, s := range []*server{ours, quiet} {
			file := filepath.Join(cfg.profile, strings.ReplaceAll(s.name, " -", "-")+".pprof")
			s.pkg = "./hack/perf/echoprof"
			s.note = "profiled (" + file + "): " + s.note
			args := s.args
			s.args = func(port int) []string {
				a := []string{"-addr", "127.0.0.1:" + strconv.Itoa(port), "-cpuprofile", file}
				if slices.Contains(args(port), "-quiet") {
					a = append(a, "-quiet")
				}
				return a
			}
		}
	}
	baselineOf := make(map[*server]*server) // ours → the same built at -baseline
	servers := []*server{ours, quiet, fortio, basic, floor}
	if cfg.baseline != "" {
		// Our servers, and for each a copy built at the baseline commit;
		// srcDir is filled in once the commit is extracted.
		for _, s := range []*server{ours, quiet} {
			b := *s
			b.name = strings.Replace(s.name, "gatewitness", "gatewitness@"+cfg.baseline, 1)
			b.note = "built at " + cfg.baseline + ": " + s.note
			b.fromCommit = cfg.baseline
			baselineOf[s] = &b
			servers = append(servers, &b)
		}
	}
	// Fortio's client keeps a connection alive only after a 2xx or a 418,
	// so the fault rows use 418: with 503 every request would pay for a
	// new TCP connection and the rows would measure connects.
	scenarios := []scenario{
		{srv: ours, name: "GET echo", path: "/echo", want: 200},
		{srv: quiet, name: "GET echo", path: "/echo", want: 200},
		{srv: fortio, name: "GET echo", path: "/echo", want: 200},
		{srv: basic, name: "GET echo", path: "/echo", want: 200},
		{srv: floor, name: "fixed JSON body", path: "/echo", want: 200},
		{srv: fortio, name: "GET /debug (headers echoed as text)", path: "/debug", want: 200},
		{srv: ours, name: "GET echo, ledger on, new id per request", path: "/echo?gatewitness-id={uuid}", want: 200},
		{srv: quiet, name: "GET echo, ledger on, new id per request", path: "/echo?gatewitness-id={uuid}", want: 200},
		{srv: quiet, name: "GET echo, ledger on, same id", path: "/echo", header: "X-Gatewitness-Id: perf-same-id", want: 200},
		{srv: quiet, name: "fault status=418, ledger on, new id per request", path: "/echo?gatewitness-id={uuid}", header: "X-Gatewitness-Fault: status=418", want: 418},
		{srv: fortio, name: "status 418 (?status=418)", path: "/echo?status=418", want: 418},
		{srv: basic, name: "status 418 (/status/418)", path: "/status/418", want: 418},
	}
	if len(baselineOf) > 0 {
		var all []scenario
		for _, sc := range scenarios {
			all = append(all, sc)
			if b := baselineOf[sc.srv]; b != nil {
				sc.srv = b
				all = append(all, sc)
			}
		}
		scenarios = all
	}
	if cfg.only != nil {
		scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool { return !cfg.only.MatchString(sc.srv.name + " " + sc.name) })
		if len(scenarios) == 0 {
			return fmt.Errorf("-only=%q matches no scenario", cfg.only)
		}
		servers = slices.DeleteFunc(servers, func(s *server) bool {
			return !slices.ContainsFunc(scenarios, func(sc scenario) bool { return sc.srv == s })
		})
	}
	if err := cfg.check(len(scenarios)); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), runDeadline)
	defer cancel()
	log.SetLogLevelQuiet(log.Error) // fortio's library logs each run at Info

	pinning := "none"
	if cfg.pin {
		var err error
		if pinning, err = pinSelf(); err != nil {
			return err
		}
	}

	dir, err := os.MkdirTemp("", "gatewitness-perf-")
	if err != nil {
		return fmt.Errorf("creating the build directory: %w", err)
	}
	defer os.RemoveAll(dir)
	built := make(map[string]string) // package@commit → binary
	for _, s := range servers {
		key := s.pkg + "@" + s.fromCommit
		if s.bin = built[key]; s.bin != "" {
			continue
		}
		s.bin = filepath.Join(dir, filepath.Base(s.pkg))
		src := ""
		if s.fromCommit != "" {
			src = filepath.Join(dir, "src-"+s.fromCommit)
			if err := extract(ctx, s.fromCommit, src); err != nil {
				return err
			}
			s.bin += "-" + s.fromCommit
		}
		if err := build(ctx, src, s.pkg, s.bin); err != nil {
			return err
		}
		built[key] = s.bin
	}
	basic.note = "gateway-api conformance " + listVersion(ctx, "sigs.k8s.io/gateway-api/conformance") + "; " + basic.note

	for _, s := range servers {
		if err := s.start(ctx, pinning != "none"); err != nil {
			stopAll(servers)
			return err
		}
	}
	defer stopAll(servers)

	results := make([][]runResult, len(scenarios))
	start := time.Now()
	for rep := range cfg.reps {
		for i, sc := range scenarios {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("stopped after %v (bound %v): %w", time.Since(start).Round(time.Second), runDeadline, err)
			}
			select {
			case <-sc.srv.done:
				return fmt.Errorf("%s exited during the run; its last output:\n%s", sc.srv.name, sc.srv.logs)
			default:
			}
			cpu0, cpuErr := processCPU(sc.srv.cmd.Process.Pid)
			r, err := load(sc, cfg)
			if err != nil {
				return fmt.Errorf("rep %d, %s %s: %w", rep+1, sc.srv.name, sc.name, err)
			}
			if cpu1, err := processCPU(sc.srv.cmd.Process.Pid); cpuErr == nil && err == nil && r.requests > 0 {
				r.cpuPerRequest = (cpu1 - cpu0) / time.Duration(r.requests)
			}
			results[i] = append(results[i], r)
			fmt.Fprintf(os.Stderr, "perf: rep %d/%d %-10s %-48s %8.0f qps\n", rep+1, cfg.reps, sc.srv.name, sc.name, r.qps)
		}
	}

	var md bytes.Buffer
	writeReport(&md, cfg, pinning, servers, scenarios, results)
	if cfg.out == "" {
		_, err = os.Stdout.Write(md.Bytes())
		return err
	}
	if err := os.WriteFile(cfg.out, md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing -out=%s: %w", cfg.out, err)
	}
	return nil
}

// pinSelf pins every thread of this process to CPU 1 and sets GOMAXPROCS to
// 1, if taskset exists and there are two CPUs or more. It returns a
// description of what it did.
func pinSelf() (string, error) {
	path, err := exec.LookPath("taskset")
	if err != nil {
		return "none (taskset not found)", nil
	}
	if runtime.NumCPU() < 2 {
		return "none (one CPU)", nil
	}
	// -a: every existing thread; threads started later inherit the mask.
	out, err := exec.Command(path, "-a", "-p", "-c", "1", strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pinning the load generator with taskset: %v: %s", err, out)
	}
	runtime.GOMAXPROCS(1)
	return "servers on CPU 0 (taskset -c 0, so GOMAXPROCS=1), load generator on CPU 1 (taskset -a -p -c 1, GOMAXPROCS=1)", nil
}

// build runs `go build -o bin pkg` in the module in dir ("" for the
// current one).
func build(ctx context.Context, dir, pkg, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (in %q): %v\n%s", pkg, dir, err, out)
	}
	return nil
}

// extract writes the tree of commit to dir, with `git archive`.
func extract(ctx context.Context, commit, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil // extracted for an earlier server
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-baseline=%s: %w", commit, err)
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	tarball, err := archive.Output()
	if err != nil {
		return fmt.Errorf("-baseline=%s: accepted: a commit of this repository: git archive: %v: %s", commit, err, stderr.Bytes())
	}
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(tarball)
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("-baseline=%s: extracting: %v: %s", commit, err, out)
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server and waits until it answers.
func (s *server) start(ctx context.Context, pin bool) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	spare, err := freePort()
	if err != nil {
		return err
	}
	var argv []string
	if pin {
		argv = append(argv, "taskset", "-c", "0")
	}
	argv = append(argv, s.bin)
	if s.args != nil {
		argv = append(argv, s.args(port)...)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Env = os.Environ()
	if s.env != nil {
		s.cmd.Env = append(s.cmd.Env, s.env(port, spare)...)
	}
	s.logs = tailbuf.New(4 << 10)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.name, err)
	}
	s.done = make(chan struct{})
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	s.base = "http://127.0.0.1:" + strconv.Itoa(port)
	return s.waitReady(ctx)
}

// waitReady polls the health path until it answers, the process exits or
// readyWithin passes.
func (s *server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyWithin)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+s.health, nil)
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s exited before answering on %s; its output:\n%s", s.name, s.base, s.logs)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s within %v; its output:\n%s", s.name, s.base, readyWithin, s.logs)
		case <-tick.C:
		}
	}
}

// stopWithin is how long a server has to exit after SIGTERM (echoprof
// writes its profile then) before it is killed.
const stopWithin = 10 * time.Second

// stopAll stops the servers this command started, with SIGTERM and then,
// if one is still running after stopWithin, SIGKILL, and waits for them.
func stopAll(servers []*server) {
	for _, s := range servers {
		if s.cmd == nil || s.cmd.Process == nil {
			continue
		}
		childproc.Stop(s.cmd.Process, false, s.done, syscall.SIGTERM, stopWithin)
	}
}

// runResult is one load run of one scenario.
type runResult struct {
	qps      float64
	p50, p99 time.Duration
	requests int64
	errors   int64 // requests without the expected status

	// cpuPerRequest is the server process's CPU time (user + system)
	// during the run divided by the requests; 0 if /proc could not tell.
	// Unlike QPS it hardly depends on what else the machine runs.
	cpuPerRequest time.Duration
}

// load drives sc for cfg.duration at maximum speed.
func load(sc scenario, cfg config) (runResult, error) {
	o := fhttp.HTTPRunnerOptions{AllowInitialErrors: true}
	o.RunnerOptions = periodic.RunnerOptions{
		QPS:         -1, // no pacing: as fast as the connections allow
		Duration:    cfg.duration,
		NumThreads:  cfg.conns,
		Percentiles: []float64{50, 99},
		Resolution:  1e-5, // 10µs buckets at the low end
		Out:         io.Discard,
	}
	o.URL = sc.srv.base + sc.path
	if sc.header != "" {
		if err := o.AddAndValidateExtraHeader(sc.header); err != nil {
			return runResult{}, fmt.Errorf("header %q: %w", sc.header, err)
		}
	}
	res, err := fhttp.RunHTTPTest(&o)
	if err != nil {
		return runResult{}, err
	}
	h := res.DurationHistogram
	r := runResult{qps: res.ActualQPS, requests: h.Count}
	for _, p := range h.Percentiles {
		d := time.Duration(p.Value * float64(time.Second))
		switch p.Percentile {
		case 50:
			r.p50 = d
		case 99:
			r.p99 = d
		}
	}
	for code, n := range res.RetCodes {
		if code != sc.want {
			r.errors += n
		}
	}
	return r, nil
}

// summary is the table row of one scenario over its runs.
type summary struct {
	qps, qpsMin, qpsMax float64
	p50, p99            time.Duration
	requests, errors    int64
	cpuPerRequest       time.Duration // median
}

// summarize takes the medians of the runs (the lower middle one for an
// even count) and sums the requests and errors.
func summarize(runs []runResult) summary {
	var s summary
	if len(runs) == 0 {
		return s
	}
	qps := make([]float64, len(runs))
	p50 := make([]time.Duration, len(runs))
	p99 := make([]time.Duration, len(runs))
	cpu := make([]time.Duration, len(runs))
	for i, r := range runs {
		qps[i], p50[i], p99[i], cpu[i] = r.qps, r.p50, r.p99, r.cpuPerRequest
		s.requests += r.requests
		s.errors += r.errors
	}
	slices.Sort(qps)
	slices.Sort(p50)
	slices.Sort(p99)
	slices.Sort(cpu)
	mid := (len(runs) - 1) / 2
	s.cpuPerRequest = cpu[mid]
	s.qps, s.qpsMin, s.qpsMax = qps[mid], qps[0], qps[len(qps)-1]
	s.p50, s.p99 = p50[mid], p99[mid]
	return s
}

// writeReport writes the Markdown table and how it was made.
func writeReport(w io.Writer, cfg config, pinning string, servers []*server, scenarios []scenario, results [][]runResult) {
	fmt.Fprintf(w, "Command: `go run ./hack/perf %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(w, "Date: %s. Go %s, %s/%s, %d CPUs. Load: fortio %s periodic runner + fast HTTP/1.1 client, max QPS, %d keep-alive connections, %v per run, %d interleaved runs per scenario. Pinning: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), fortioVersion(), cfg.conns, cfg.duration, cfg.reps, pinning)
	fmt.Fprintf(w, "| server | scenario | QPS (median) | QPS min–max | p50 | p99 | server CPU / request | errors / requests |\n")
	fmt.Fprintf(w, "|---|---|--:|--:|--:|--:|--:|--:|\n")
	for i, sc := range scenarios {
		s := summarize(results[i])
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f–%.0f | %s | %s | %.1f µs | %d / %d |\n",
			sc.srv.name, sc.name, s.qps, s.qpsMin, s.qpsMax, fmtLatency(s.p50), fmtLatency(s.p99),
			float64(s.cpuPerRequest)/float64(time.Microsecond), s.errors, s.requests)
	}
	fmt.Fprintf(w, "\nServers:\n\n")
	for _, s := range servers {
		fmt.Fprintf(w, "- %s: `%s`; %s.\n", s.name, s.pkg, s.note)
	}
}

// fmtLatency prints d in microseconds below 10ms and milliseconds above.
func fmtLatency(d time.Duration) string {
	if d < 10*time.Millisecond {
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

// fortioVersion is the version of the fortio module this binary was built
// with.
func fortioVersion() string {
	return moduleVersionOr("fortio.org/fortio", "(unknown version)")
}

// listVersion returns the version of module path that the current module
// requires, by `go list -m`, or "(unknown version)".
func listVersion(ctx context.Context, path string) string {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", path).Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "(unknown version)"
}

// moduleVersionOr is moduleVersion(path), or def if it is not known.
func moduleVersionOr(path, def string) string {
	if v := moduleVersion(path); v != "" {
		return v
	}
	return def
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100
// on Linux).
const clockTick = 10 * time.Millisecond

// processCPU returns the user + system CPU time process pid has used, from
// /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields 14 and 15 (utime,
	// stime) count from the ')' that ends it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' after the command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 and 15 of the whole line
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: CPU time %q: %w", pid, s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// moduleVersion returns the version of module path in this binary's build
// information, or "".
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			return m.Version
		}
	}
	return ""
}
