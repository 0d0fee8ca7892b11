// Command echo-backend is gatewitness's fault-injecting echo server. It reads
// the same environment as upstream echo-basic (HTTP_PORT, H2C_PORT,
// HTTPS_PORT, TLS_SERVER_CERT, GRPC_ECHO_SERVER, TCP_ECHO_SERVER, POD_NAME,
// NAMESPACE, ...) plus its own GATEWITNESS_* variables; flags given on the
// command line override them. See echo-backend/README.md for every control.
//
// Like echo-basic it prints "Echoing back request made to <path> to client
// (<address>)" for every echoed HTTP request, which upstream's mirror tests
// read from the pod's log; -quiet or GATEWITNESS_QUIET=true turns that off.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"
)

func main() {
	log.SetFlags(0)
	cfg, err := config(os.Args[1:], os.Getenv)
	if err != nil {
		log.Fatalf("echo-backend: %v", err)
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

// envQuiet turns off the request log, as -quiet does.
const envQuiet = "GATEWITNESS_QUIET"

// config reads the environment, with -mode deciding the mode (and so the
// ports' defaults) before anything else, and then applies the flags that
// were given.
func config(args []string, getenv func(string) string) (echobackend.Config, error) {
	fs := flag.NewFlagSet("echo-backend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quiet := fs.Bool("quiet", false, "print no line per echoed request (default from "+envQuiet+")")
	mode := fs.String("mode", "", "what to serve: http, grpc or tcp (default: from GRPC_ECHO_SERVER / TCP_ECHO_SERVER, else http)")
	host := fs.String("host", "", "address to bind every port to (empty: all interfaces)")
	httpPort := fs.String("http-port", "", "HTTP port (gRPC port in grpc mode); empty disables")
	h2cPort := fs.String("h2c-port", "", "h2c port (http mode); empty disables")
	httpsPort := fs.String("https-port", "", "TLS port, served when a certificate is set")
	tcpPort := fs.String("tcp-port", "", "TCP line-echo port (http mode) or echo-basic TCP port (tcp mode); empty disables")
	maxDelay := fs.Duration("max-delay", 0, "cap on any fault delay and on one attempt's total time (default 5m)")
	ttl := fs.Duration("ledger-ttl", 0, "how long a request id's ledger is kept after its last attempt (default 10m)")
	maxIDs := fs.Int("ledger-max-ids", 0, "request ids kept; the oldest are evicted past this (default 10000)")
	maxAttempts := fs.Int("ledger-max-attempts", 0, "attempts stored per request id (default 100)")
	maxBytes := fs.Int64("ledger-max-bytes", 0, "bytes of headers, paths and methods the ledger keeps; the oldest ids are evicted past this (default 64 MiB)")
	readHeader := fs.Duration("read-header-timeout", 0, "time a client has to send the request headers (default 10s)")
	read := fs.Duration("read-timeout", 0, "time a client has to send the request body, from the request's arrival (default 1m)")
	write := fs.Duration("write-timeout", 0, "time the answer may take to write, from the end of the request headers (default max-delay + 1m)")
	idle := fs.Duration("idle-timeout", 0, "time a kept-alive connection may wait for its next request (default 5m)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
			os.Exit(0)
		}
		return echobackend.Config{}, err
	}
	env := getenv
	switch *mode {
	case "":
	case "http", "grpc", "tcp":
		env = func(k string) string {
			switch k {
			case echobackend.EnvGRPCMode:
				return map[bool]string{true: "1"}[*mode == "grpc"]
			case echobackend.EnvTCPMode:
				return map[bool]string{true: "1"}[*mode == "tcp"]
			}
			return getenv(k)
		}
	default:
		return echobackend.Config{}, fmt.Errorf("-mode=%q: accepted: http, grpc or tcp", *mode)
	}
	cfg, err := echobackend.ConfigFromEnv(env)
	if err != nil {
		return cfg, err
	}
	quietEnv := false
	if v := getenv(envQuiet); v != "" {
		if quietEnv, err = strconv.ParseBool(v); err != nil {
			return cfg, fmt.Errorf("%s=%q: accepted: true or false (also 1, 0, t, f)", envQuiet, v)
		}
	}
	if !quietEnv {
		// One small write per request; an *os.File is safe for concurrent
		// use and unbuffered, so the line is in the log when the answer is.
		cfg.Log = os.Stdout
	} else {
		cfg.ErrorLog = io.Discard
	}
	badName := ""
	fs.Visit(func(f *flag.Flag) {
		bad := false
		switch f.Name {
		case "quiet":
			// Quiet also silences the servers' line per broken connection.
			if *quiet {
				cfg.Log, cfg.ErrorLog = nil, io.Discard
			} else {
				cfg.Log, cfg.ErrorLog = os.Stdout, nil
			}
		case "host":
			cfg.Host = *host
		case "http-port":
			cfg.HTTPPort = *httpPort
		case "h2c-port":
			cfg.H2CPort = *h2cPort
		case "https-port":
			cfg.HTTPSPort = *httpsPort
		case "tcp-port":
			cfg.TCPPort = *tcpPort
		case "max-delay":
			cfg.Limits.MaxDelay = *maxDelay
			bad = bad || *maxDelay <= 0
		case "ledger-ttl":
			cfg.Ledger.TTL = *ttl
			bad = bad || *ttl <= 0
		case "ledger-max-ids":
			cfg.Ledger.MaxIDs = *maxIDs
			bad = bad || *maxIDs <= 0
		case "ledger-max-attempts":
			cfg.Ledger.MaxAttempts = *maxAttempts
			bad = bad || *maxAttempts <= 0
		case "ledger-max-bytes":
			cfg.Ledger.MaxBytes = *maxBytes
			bad = bad || *maxBytes <= 0
		case "read-header-timeout":
			cfg.Timeouts.ReadHeader = *readHeader
			bad = bad || *readHeader <= 0
		case "read-timeout":
			cfg.Timeouts.Read = *read
			bad = bad || *read <= 0
		case "write-timeout":
			cfg.Timeouts.Write = *write
			bad = bad || *write <= 0
		case "idle-timeout":
			cfg.Timeouts.Idle = *idle
			bad = bad || *idle <= 0
		}
		if bad && badName == "" {
			badName = f.Name
		}
	})
	if badName != "" {
		return cfg, fmt.Errorf("-%s: accepted: a value above zero", badName)
	}
	return cfg, nil
}
