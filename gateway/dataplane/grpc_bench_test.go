package dataplane_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
)

// BenchmarkGRPCUnaryAdded measures what the data plane adds to a unary
// gRPC call: the same call to the echo-backend directly and through the
// gateway, interleaved in blocks of 50 so both see the same neighbours.
// Client, gateway and backend share the process, so the difference of
// each pair is the gateway's: latency (median and mean), CPU time (from
// getrusage) and read and write system calls (from /proc/self/io) per
// call.
//
//	go test -run '^$' -bench GRPCUnaryAdded -benchtime 20000x ./gateway/dataplane/
func BenchmarkGRPCUnaryAdded(b *testing.B) {
	eb := startGRPCEcho(b)
	addr := grpcTimeoutGateway(b, dataplanetest.Hooks{}, standardRules(eb)...)
	dial := func(target, authority string) echopb.EchoClient {
		conn, err := grpc.NewClient("passthrough:///"+target,
			grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(authority))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		return echopb.NewEchoClient(conn)
	}
	paths := []struct {
		name   string
		client echopb.EchoClient
		m      callCost
	}{
		{name: "direct", client: dial(eb.Addr(echobackend.ListenerGRPC), "echo")},
		{name: "gateway", client: dial(addr, "grpc.example.com")},
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-rule", "zero")
	req := &echopb.EchoRequest{Payload: []byte("ping")}
	for _, p := range paths { // warm the connections up
		for range 100 {
			if _, err := p.client.Unary(ctx, req); err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
		}
	}

	const block = 50
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(block, b.N-done)
		for i := range paths {
			p := &paths[i]
			before := sample(b)
			for range n {
				start := time.Now()
				if _, err := p.client.Unary(ctx, req); err != nil {
					b.Fatalf("%s: %v", p.name, err)
				}
				p.m.latencies = append(p.m.latencies, time.Since(start))
			}
			p.m.add(sample(b).minus(before))
		}
		done += n
	}
	b.StopTimer()
	direct, gw := paths[0].m, paths[1].m
	b.ReportMetric(direct.median().Seconds()*1e6, "direct-p50-µs")
	b.ReportMetric(gw.median().Seconds()*1e6, "gateway-p50-µs")
	b.ReportMetric((gw.median()-direct.median()).Seconds()*1e6, "added-p50-µs")
	b.ReportMetric((gw.mean()-direct.mean()).Seconds()*1e6, "added-mean-µs")
	b.ReportMetric(direct.perCall(direct.total.cpu).Seconds()*1e6, "direct-cpu-µs")
	b.ReportMetric(gw.perCall(gw.total.cpu).Seconds()*1e6, "gateway-cpu-µs")
	b.ReportMetric(gw.perCallf(float64(gw.total.writes))-direct.perCallf(float64(direct.total.writes)), "added-writes/call")
	b.ReportMetric(gw.perCallf(float64(gw.total.reads))-direct.perCallf(float64(direct.total.reads)), "added-reads/call")
}

// callCost accumulates the calls of one path.
type callCost struct {
	latencies []time.Duration
	total     usage
}

func (c *callCost) add(u usage) {
	c.total.cpu += u.cpu
	c.total.reads += u.reads
	c.total.writes += u.writes
}

func (c *callCost) median() time.Duration {
	s := slices.Clone(c.latencies)
	slices.Sort(s)
	return s[len(s)/2]
}

func (c *callCost) mean() time.Duration {
	var sum time.Duration
	for _, d := range c.latencies {
		sum += d
	}
	return sum / time.Duration(len(c.latencies))
}

func (c *callCost) perCall(d time.Duration) time.Duration { return d / time.Duration(len(c.latencies)) }
func (c *callCost) perCallf(x float64) float64            { return x / float64(len(c.latencies)) }

// usage is what the process has used so far.
type usage struct {
	cpu           time.Duration
	reads, writes int64
}

func (u usage) minus(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, reads: u.reads - v.reads, writes: u.writes - v.writes}
}

// sample reads the process's CPU time and read and write system calls.
func sample(b *testing.B) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	u := usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	io, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io to count system calls: %v", err)
	}
	for _, line := range strings.Split(string(io), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "syscr":
			u.reads = n
		case "syscw":
			u.writes = n
		}
	}
	return u
}
