// Package standalonecmd holds what the commands that run the reference
// gateway against a Kubernetes API server (gatewitness gateway,
// hack/lagging-gateway) set up alike before they start it: the log, and
// the client of the cluster their --kubeconfig names.
package standalonecmd

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gatewitness/gatewitness/gateway/standalone"
)

// Logger returns a command's log: text lines on w at info level, and with
// verbose logr's V(1) lines too. It makes controller-runtime's own log that
// log as well (named "controller-runtime"); controller-runtime takes only
// the first log it is given, so a command calls Logger once, at its start.
func Logger(w io.Writer, verbose bool) logr.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.Level(-1) // logr's V(1)
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	crlog.SetLogger(log.WithName("controller-runtime"))
	return log
}

// Exit statuses Client returns with its error.
const (
	// ExitUsage: the kubeconfig file cannot be read, or names no API
	// server (the --kubeconfig flag is wrong).
	ExitUsage = 2
	// ExitFailure: the client of the API server cannot be made.
	ExitFailure = 1
)

// Client returns a client (standalone.NewClient) of the API server the
// kubeconfig file at path names. On failure it returns the error, naming
// --kubeconfig where the file is at fault, and the exit status the command
// ends with: ExitUsage or ExitFailure.
func Client(kubeconfig string) (client.WithWatch, int, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, ExitUsage, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	c, err := standalone.NewClient(cfg)
	if err != nil {
		return nil, ExitFailure, err
	}
	return c, 0, nil
}
