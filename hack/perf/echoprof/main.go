// Command echoprof serves gatewitness's HTTP echo (httpecho.NewServer on one
// plain HTTP port, with a ledger of default bounds, as cmd/echo-backend's
// HTTP port) while writing a CPU profile of itself, until SIGINT or SIGTERM.
// hack/perf runs it in place of cmd/echo-backend when given -cpuprofile, so
// the profile is of the server under the same load as the table.
//
//	echoprof -addr 127.0.0.1:3000 -cpuprofile echo.pprof [-quiet]
//
// Read the profile with `go tool pprof -top echo.pprof`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "address to listen on, host:port")
	out := flag.String("cpuprofile", "", "file to write the CPU profile to (required)")
	quiet := flag.Bool("quiet", false, "print no line per echoed request, as cmd/echo-backend -quiet")
	flag.Parse()
	if err := run(*addr, *out, *quiet); err != nil {
		fmt.Fprintf(os.Stderr, "echoprof: %v\n", err)
		os.Exit(1)
	}
}

func run(addr, out string, quiet bool) error {
	if out == "" {
		return errors.New("-cpuprofile: accepted: a file name to write the profile to")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-addr=%q: %w", addr, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("starting the CPU profile: %w", err)
	}

	opts := httpecho.Options{HTTPPort: port, Listener: "http", Ledger: ledger.New(ledger.Options{})}
	if !quiet {
		opts.Log = os.Stdout
	}
	srv := httpecho.NewServer(opts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var serveErr error
	select {
	case <-sig:
	case serveErr = <-served:
	}
	srv.Close()
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the CPU profile: %w", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", serveErr)
	}
	return nil
}
