package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gatewitness/gatewitness/internal/childproc"
	"github.com/gatewitness/gatewitness/internal/tailbuf"
)

// Process is a proxy's master process, started in the foreground as this
// process's child, with its output kept (the last outputLimit bytes).
type Process struct {
	cmd    *exec.Cmd
	out    *tailbuf.Buffer
	exited chan struct{}
	err    error // the exit, once exited is closed
}

// outputLimit bounds the proxy output a Process keeps.
const outputLimit = 64 << 10

// Start starts bin with args in dir. The process runs until Stop.
func Start(bin string, args []string, dir string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out := tailbuf.New(outputLimit)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: Stop ends the workers too, even if the
	// master is gone. A master whose parent dies without Stop (a child
	// test binary killed at its time limit) is killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Signal sends sig to the master process.
func (p *Process) Signal(sig os.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("the proxy has exited (%v); its output:\n%s", p.err, p.Output())
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// Exited is closed when the master process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Output is the end of what the proxy printed.
func (p *Process) Output() string { return p.out.String() }

// Stop asks the process group to stop with sig, waits up to grace, then
// kills it.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) error {
	childproc.Stop(p.cmd.Process, true, p.exited, sig, grace)
	// A worker left behind by a master that died first.
	childproc.KillGroup(p.cmd.Process)
	return nil
}

// Check runs bin with args (a proxy's configuration check) and returns
// its output in the error when it fails.
func Check(ctx context.Context, bin string, args []string, dir string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w:\n%s", bin, strings.Join(args, " "), err, out)
	}
	return nil
}

// WaitServing polls the control endpoint at addr ("ip:port", plain HTTP)
// on fresh connections until it answers want, the generation the newest
// configuration carries: evidence that the proxy's workers serve that
// configuration, not only that it was written. It fails when ctx ends
// first or p exits, with the last answer seen.
func WaitServing(ctx context.Context, p *Process, addr, want string) error {
	client := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		Timeout:   time.Second,
	}
	defer client.CloseIdleConnections()
	last := "no answer yet"
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := get(ctx, client, "http://"+addr+"/")
		switch {
		case err == nil && got == want:
			return nil
		case err == nil:
			last = fmt.Sprintf("generation %q", got)
		default:
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the proxy did not serve generation %q in time (last: %s): %w; its output:\n%s", want, last, ctx.Err(), p.Output())
		case <-p.Exited():
			return fmt.Errorf("the proxy exited (%v) before serving generation %q; its output:\n%s", p.err, want, p.Output())
		case <-tick.C:
		}
	}
}

func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// FreePort returns a port free on ip now: the kernel's pick for a socket
// bound there and closed at once. Each adapter binds an address of its
// own (NewSockets), so nothing else takes the port before the proxy does.
func FreePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// errUnsupported marks what a proxy's configuration cannot express.
var errUnsupported = errors.New("cannot be expressed in the proxy's configuration")
