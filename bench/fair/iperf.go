package fair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os/exec"
	"strconv"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/netem"
)

// iperf3 runs iperf3's TCP test from braid-b to braid-a: n parallel flows
// (-P) under congestion control cc (-C), its receiver reporting every
// tperf.SampleEvery (-i). iperf3's report gives interval times relative to
// the test's start, which it stamps to the second only, so the start is
// placed by the end: the server exits two round trips after the last
// interval (the client's TEST_END and the exchange of results), and
// this process sees it exit.
type iperf3 struct {
	server, client *exec.Cmd
	srvOut, cliOut bytes.Buffer
	srvDone        chan exit
	cliDone        chan exit
	rtt            time.Duration
}

// exit is how a process ended, and when.
type exit struct {
	err error
	at  time.Time
}

// iperf3Bin is the program run.
const iperf3Bin = "iperf3"

// waitFor waits for cmd in a goroutine and reports its exit.
func waitFor(cmd *exec.Cmd) chan exit {
	done := make(chan exit, 1)
	go func() {
		err := cmd.Wait()
		done <- exit{err, time.Now()}
	}()
	return done
}

// startIperf3 starts the server in braid-a on addr:port and the client in
// braid-b, retrying the client until the server listens.
func startIperf3(ctx context.Context, n int, cc string, addr netip.Addr, port int, dur, rtt time.Duration) (*iperf3, error) {
	if err := hasIperf3(); err != nil {
		return nil, err
	}
	ip := &iperf3{rtt: rtt}
	p := strconv.Itoa(port)
	every := strconv.FormatFloat(tperf.SampleEvery.Seconds(), 'f', -1, 64)
	ip.server = netem.Command(ctx, netem.NSA, iperf3Bin, "-s", "-1", "-J", "-B", addr.String(), "-p", p, "-i", every)
	ip.server.Stdout = &ip.srvOut
	if err := ip.server.Start(); err != nil {
		return nil, fmt.Errorf("fair: iperf3 server: %w", err)
	}
	ip.srvDone = waitFor(ip.server)
	secs := strconv.FormatFloat(math.Ceil(dur.Seconds()), 'f', 0, 64)
	for deadline := time.Now().Add(30 * time.Second); ; {
		ip.cliOut.Reset()
		ip.client = netem.Command(ctx, netem.NSB, iperf3Bin, "-c", addr.String(), "-p", p, "-C", cc, "-t", secs,
			"-P", strconv.Itoa(n), "-J")
		ip.client.Stdout = &ip.cliOut
		if err := ip.client.Start(); err != nil {
			ip.kill()
			return nil, fmt.Errorf("fair: iperf3 client: %w", err)
		}
		ip.cliDone = waitFor(ip.client)
		// A refused connection ends the client within milliseconds; a
		// test that runs is past that within a second.
		select {
		case e := <-ip.cliDone:
			if e.err == nil || time.Now().After(deadline) || ctx.Err() != nil {
				ip.cliDone <- e
				ip.kill()
				return nil, fmt.Errorf("fair: iperf3 client ended at once (%v): %s", e.err, ip.cliOut.String())
			}
			time.Sleep(100 * time.Millisecond)
		case <-time.After(time.Second):
			return ip, nil
		}
	}
}

// kill ends both processes and waits for them.
func (ip *iperf3) kill() {
	for _, c := range []*exec.Cmd{ip.server, ip.client} {
		if c != nil && c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	<-ip.srvDone
	if ip.cliDone != nil {
		<-ip.cliDone
	}
}

func (ip *iperf3) wait() ([]Series, string, error) {
	c, s := <-ip.cliDone, <-ip.srvDone
	if err := errors.Join(c.err, s.err); err != nil {
		return nil, "", fmt.Errorf("fair: iperf3: %w: %s", err, ip.cliOut.String())
	}
	series, err := iperf3Series(ip.srvOut.Bytes(), s.at.Add(-2*ip.rtt))
	if err != nil {
		return nil, "", err
	}
	var cli struct {
		End struct {
			CC string `json:"sender_tcp_congestion"`
		} `json:"end"`
	}
	if err := json.Unmarshal(ip.cliOut.Bytes(), &cli); err != nil {
		return nil, "", fmt.Errorf("fair: iperf3 client's report: %w", err)
	}
	return series, cli.End.CC, nil
}

// iperf3Report is the part of an iperf3 server's JSON report read here.
type iperf3Report struct {
	Intervals []struct {
		Streams []struct {
			Socket int     `json:"socket"`
			End    float64 `json:"end"`
			Bytes  int64   `json:"bytes"`
		} `json:"streams"`
	} `json:"intervals"`
	Error string `json:"error"`
}

// iperf3Series turns an iperf3 server's report into one series per flow,
// its last interval ending at end.
func iperf3Series(report []byte, end time.Time) ([]Series, error) {
	var r iperf3Report
	if err := json.Unmarshal(report, &r); err != nil {
		return nil, fmt.Errorf("fair: iperf3 server's report: %w", err)
	}
	if r.Error != "" {
		return nil, fmt.Errorf("fair: iperf3: %s", r.Error)
	}
	if len(r.Intervals) == 0 || len(r.Intervals[0].Streams) == 0 {
		return nil, errors.New("fair: iperf3 server's report has no intervals")
	}
	var last float64
	for _, s := range r.Intervals[len(r.Intervals)-1].Streams {
		last = max(last, s.End)
	}
	start := end.Add(-time.Duration(last * float64(time.Second)))
	index := map[int]int{} // socket → flow
	var out []Series
	for _, iv := range r.Intervals {
		for _, s := range iv.Streams {
			i, ok := index[s.Socket]
			if !ok {
				i = len(out)
				index[s.Socket] = i
				out = append(out, Series{{At: start}})
			}
			prev := out[i][len(out[i])-1].Bytes
			at := start.Add(time.Duration(s.End * float64(time.Second)))
			out[i] = append(out[i], tperf.Sample{At: at, Bytes: prev + s.Bytes})
		}
	}
	return out, nil
}

// hasIperf3 reports whether iperf3 is on PATH, and why not.
func hasIperf3() error {
	_, err := exec.LookPath(iperf3Bin)
	if err != nil {
		return fmt.Errorf("%w (mk/pkgs.sh installs it)", err)
	}
	return nil
}
