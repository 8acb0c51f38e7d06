package paper_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/paper"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/worker"
)

// workerEnv makes the test binary act as `braid worker` (the helper-process
// pattern of os/exec's tests), so the test needs no built binary.
const workerEnv = "BRAID_PAPER_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(runWorker(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runWorker is a minimal `braid worker` with the flags the bench passes.
func runWorker(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	srv, threads := fs.String("server", "", ""), fs.Int("threads", 1, "")
	tname, name := fs.String("transport", transports.Default, ""), fs.String("name", "", "")
	secretFile, _ := fs.String("secret-file", "", ""), fs.String("log-level", "", "")
	if fs.Parse(args) != nil {
		return 2
	}
	secret, err := os.ReadFile(*secretFile)
	t, err2 := transports.New(*tname, transports.Options{})
	if err != nil || err2 != nil {
		return 1
	}
	w, err := worker.New(worker.Config{Name: *name, Servers: []string{*srv}, Threads: *threads, Transport: t,
		Listen: "127.0.0.1:0", InfoListen: "127.0.0.1:0", Secret: []byte(strings.TrimSpace(string(secret)))})
	if err != nil {
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if w.Run(ctx) != nil {
		return 1
	}
	return 0
}

func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	out := t.TempDir()
	cfg := paper.Config{Exe: os.Args[0], Env: []string{workerEnv + "=1"}, Out: out, Quick: true,
		Timeout: 4 * time.Minute, JobTimeout: time.Minute, NoSlow: os.Geteuid() != 0, Log: tlog{t}}
	res, err := paper.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Figures) < 7 {
		t.Fatalf("%d figures", len(res.Figures))
	}
	for _, fr := range res.Figures {
		for _, ext := range []string{".csv", ".json", ".svg", ".png"} {
			if _, err := os.Stat(filepath.Join(out, fr.ID+ext)); err != nil {
				t.Error(err)
			}
		}
		checkCSV(t, filepath.Join(out, fr.ID+".csv"), len(fr.Missing) == 0)
	}
	if b, err := os.ReadFile(filepath.Join(out, "REPORT.md")); err != nil || !strings.Contains(string(b), "Fig. 4") {
		t.Errorf("REPORT.md: %v", err)
	}
	if res.Floor.ParallelMS <= 0 {
		t.Errorf("floor %+v: no measurement of the op on all threads at once", res.Floor)
	}
	// The floor section's CPU accounting sees the worker processes.
	cpu := 0.0
	for _, fr := range res.Figures {
		for _, rec := range fr.Records {
			if rec.Line == "2 workers × 2 tcpn streams" && rec.Units == 20 {
				cpu = max(cpu, rec.WorkerCPUMS)
			}
		}
	}
	if cpu <= 0 {
		t.Errorf("no worker CPU time recorded for 2 workers × 2 tcpn streams at 20 units")
	}
}

// checkCSV parses a figure's CSV and checks its rows have numbers.
func checkCSV(t *testing.T, path string, complete bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if complete && len(rows) < 2 {
		t.Errorf("%s: no data rows", path)
	}
	for _, row := range rows[1:] {
		units := row[2]
		if rows[0][2] != "units" {
			units = row[8]
		}
		if n, err := strconv.Atoi(units); err != nil || n < 1 {
			t.Errorf("%s: bad units %q", path, units)
		}
	}
}

// tlog sends the run's progress lines to the test log, timed, so that a
// run out of time shows where the time went. (The worker processes are
// this test binary: under -race the whole quick run takes ~100 s here.)
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("%s %s", time.Now().Format("15:04:05.000"), bytes.TrimRight(p, "\n"))
	return len(p), nil
}
