package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The API's pollers run in a process of their own, started at the
// server's nice value: in this process they would wait for a core behind
// the niced server and the fleet's thousands of goroutines, and measure
// that wait rather than the server. The child is the braid binary
// (Config.Exe) with the hidden subcommand PollCommand; it polls until its
// stdin ends and then writes a pollReport as JSON on its stdout.

// PollCommand is the hidden `braid bench` subcommand that runs Poll.
const PollCommand = "scale-poll"

// PollTokenEnv names the environment variable that carries the child's
// bearer token (not its command line, where anyone can read it).
const PollTokenEnv = "BRAID_SCALE_POLL_TOKEN"

// PollSpec is what the child polls: the first page (Page entries) of GET
// /v1/workers and GET /v1/jobs, and GET /healthz beside them, each every
// Every.
type PollSpec struct {
	Base  string // the server's API, e.g. http://127.0.0.1:8080
	Token string
	Page  int
	Every time.Duration
}

// pollSeries is one path's latencies in milliseconds, in the order taken,
// and its failed polls.
type pollSeries struct {
	MS     []float64 `json:"ms"`
	At     []float64 `json:"at"` // when each poll began, Unix seconds
	Errors int       `json:"errors"`
}

// pollReport is what the child writes on its stdout.
type pollReport struct {
	Workers pollSeries `json:"workers"`
	Jobs    pollSeries `json:"jobs"`
	Healthz pollSeries `json:"healthz"`
}

// Poll is the child's side: it polls spec's three paths until stop ends
// (EOF or an error: the parent closed the pipe or died) or ctx does, then
// writes the latencies to out as one JSON object.
func Poll(ctx context.Context, spec PollSpec, stop io.Reader, out io.Writer) error {
	if spec.Base == "" || spec.Page < 1 || spec.Every <= 0 {
		return fmt.Errorf("scale: poll: want a base URL, a page size and an interval, have %+v", spec)
	}
	ht := http.DefaultTransport.(*http.Transport).Clone()
	ht.MaxIdleConnsPerHost = 4
	hc := &http.Client{Transport: ht}
	page := strconv.Itoa(spec.Page)
	polls := []*poller{
		newPoller(hc, spec.Base, "/v1/workers?limit="+page, spec.Token, spec.Every),
		newPoller(hc, spec.Base, "/v1/jobs?limit="+page, spec.Token, spec.Every),
		// The baseline: a handler that does nothing, through the same
		// client, processes and cores as the two lists.
		newPoller(hc, spec.Base, "/healthz", spec.Token, spec.Every),
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The stop signal, stdin's end; if ctx ends first this goroutine stays
	// blocked in the read until the process exits.
	go func() {
		defer cancel()
		_, _ = io.Copy(io.Discard, stop)
	}()
	var wg sync.WaitGroup
	for _, p := range polls {
		wg.Go(func() { p.run(pctx) })
	}
	wg.Wait()
	var rep pollReport
	for i, s := range []*pollSeries{&rep.Workers, &rep.Jobs, &rep.Healthz} {
		s.MS, s.At, s.Errors = polls[i].taken()
	}
	return json.NewEncoder(out).Encode(rep)
}

// pollProc is the child polling the server, seen from the bench.
type pollProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
	errb  bytes.Buffer
}

// startPollProc starts the child at nice value nice (the server's; 0 starts
// it as this process), polling spec.
func startPollProc(exe string, spec PollSpec, nice int) (*pollProc, error) {
	p := &pollProc{cmd: exec.Command(exe, "bench", PollCommand, "--base", spec.Base,
		"--page", strconv.Itoa(spec.Page), "--every", spec.Every.String())}
	p.cmd.Env = append(os.Environ(), PollTokenEnv+"="+spec.Token)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("scale: the pollers' process: %w", err)
	}
	if err := startNiced(p.cmd, nice); err != nil {
		return nil, fmt.Errorf("scale: start the pollers' process: %w", err)
	}
	return p, nil
}

// finish stops the child (closes its stdin) and returns what it measured.
func (p *pollProc) finish() (pollReport, error) {
	p.stdin.Close()
	var rep pollReport
	if err := p.cmd.Wait(); err != nil {
		return rep, fmt.Errorf("scale: the pollers' process: %w: %s", err, bytes.TrimSpace(p.errb.Bytes()))
	}
	if err := json.Unmarshal(p.out.Bytes(), &rep); err != nil {
		return rep, fmt.Errorf("scale: the pollers' report: %w", err)
	}
	return rep, nil
}
