// Command echo-backend is gatecheck's fault-injecting echo server. It reads
// the same environment as upstream echo-basic (HTTP_PORT, H2C_PORT,
// HTTPS_PORT, TLS_SERVER_CERT, GRPC_ECHO_SERVER, TCP_ECHO_SERVER, POD_NAME,
// NAMESPACE, ...) plus its own GATECHECK_* variables; flags override them.
// See echo-backend/README.md for every control.
//
// Like echo-basic it prints "Echoing back request made to <path> to client
// (<address>)" for every echoed HTTP request, which upstream's mirror tests
// read from the pod's log; -quiet or GATECHECK_QUIET=true turns that off.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"

	echobackend "github.com/gatecheck/gatecheck/echo-backend"
)

// envQuiet turns off the request log, as -quiet does.
const envQuiet = "GATECHECK_QUIET"

func main() {
	log.SetFlags(0)
	cfg, err := echobackend.ConfigFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("echo-backend: %v", err)
	}
	quietDefault := false
	if v := os.Getenv(envQuiet); v != "" {
		if quietDefault, err = strconv.ParseBool(v); err != nil {
			log.Fatalf("echo-backend: %s=%q: accepted: true or false (also 1, 0, t, f)", envQuiet, v)
		}
	}
	fs := flag.NewFlagSet("echo-backend", flag.ExitOnError)
	quiet := fs.Bool("quiet", quietDefault, "print no line per echoed request (default from "+envQuiet+")")
	mode := fs.String("mode", cfg.Mode.String(), "what to serve: http, grpc or tcp")
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address to bind every port to (empty: all interfaces)")
	fs.StringVar(&cfg.HTTPPort, "http-port", cfg.HTTPPort, "HTTP port (gRPC port in grpc mode); empty disables")
	fs.StringVar(&cfg.H2CPort, "h2c-port", cfg.H2CPort, "h2c port (http mode); empty disables")
	fs.StringVar(&cfg.HTTPSPort, "https-port", cfg.HTTPSPort, "TLS port, served when a certificate is set")
	fs.StringVar(&cfg.TCPPort, "tcp-port", cfg.TCPPort, "TCP line-echo port (http mode) or echo-basic TCP port (tcp mode); empty disables")
	fs.DurationVar(&cfg.Limits.MaxDelay, "max-delay", cfg.Limits.MaxDelay, "cap on any fault delay and on one attempt's total time (0: 5m)")
	fs.DurationVar(&cfg.Ledger.TTL, "ledger-ttl", cfg.Ledger.TTL, "how long a request id's ledger is kept after its last attempt (0: 10m)")
	fs.IntVar(&cfg.Ledger.MaxIDs, "ledger-max-ids", cfg.Ledger.MaxIDs, "request ids kept; the oldest are evicted past this (0: 10000)")
	fs.IntVar(&cfg.Ledger.MaxAttempts, "ledger-max-attempts", cfg.Ledger.MaxAttempts, "attempts stored per request id (0: 100)")
	_ = fs.Parse(os.Args[1:])
	switch *mode {
	case "http":
		cfg.Mode = echobackend.ModeHTTP
	case "grpc":
		cfg.Mode = echobackend.ModeGRPC
	case "tcp":
		cfg.Mode = echobackend.ModeTCP
	default:
		log.Fatalf("echo-backend: -mode=%q: accepted: http, grpc or tcp", *mode)
	}
	if !*quiet {
		// One small write per request; an *os.File is safe for concurrent
		// use and unbuffered, so the line is in the log when the answer is.
		cfg.Log = os.Stdout
	}

	b, err := echobackend.Start(cfg)
	if err != nil {
		log.Fatalf("echo-backend: %v", err)
	}
	addrs := b.Addrs()
	names := make([]string, 0, len(addrs))
	for n := range addrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Printf("echo-backend: serving %s on %s\n", n, addrs[n])
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		fmt.Printf("echo-backend: %v, stopping\n", s)
	case err := <-b.Err():
		log.Printf("echo-backend: %v", err)
		_ = b.Close()
		os.Exit(1)
	}
	_ = b.Close()
}
