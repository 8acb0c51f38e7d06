package paper

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/braidhq/braid/internal/cpucg"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/server"
)

// fleet is an in-process server and its worker processes.
type fleet struct {
	client  *client.Client
	input   string // the GIF's object id
	cancel  context.CancelFunc
	served  chan error
	procs   []*exec.Cmd
	groups  []*cpucg.Group
	tmp     string
	workers []string
}

// startFleet starts a server and one worker process per spec, waits until
// every association is up and uploads the GIF.
func startFleet(ctx context.Context, cfg *Config, ws []workerSpec) (_ *fleet, err error) {
	f := &fleet{served: make(chan error, 1)}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if f.tmp, err = os.MkdirTemp("", "braid-paper-*"); err != nil {
		return nil, fmt.Errorf("paper: temp dir: %w", err)
	}
	secretFile, err := writeSecret(f.tmp)
	if err != nil {
		return nil, err
	}
	if err = f.startServer(secretFile); err != nil {
		return nil, err
	}
	for i, w := range ws {
		if err = f.startWorker(cfg, i, w, secretFile); err != nil {
			return nil, err
		}
	}
	if err = f.waitUp(ctx, len(ws)); err != nil {
		return nil, err
	}
	obj, err := f.client.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		return nil, fmt.Errorf("paper: upload the GIF: %w", err)
	}
	f.input = obj.ID
	return f, nil
}

func writeSecret(dir string) (string, error) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	path := filepath.Join(dir, "secret")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)), 0o600); err != nil {
		return "", fmt.Errorf("paper: write secret: %w", err)
	}
	return path, nil
}

func (f *fleet) startServer(secretFile string) error {
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		return fmt.Errorf("paper: read secret: %w", err)
	}
	ts, err := transports.All(transports.Options{})
	if err != nil {
		return fmt.Errorf("paper: transports: %w", err)
	}
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: filepath.Join(f.tmp, "data"),
		Secret: secret, Transports: ts})
	if err != nil {
		return fmt.Errorf("paper: server: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.client = cancel, client.New(srv.URL()).WithRetry(client.Retry{For: -1}) // a dead server is noticed at once
	go func() { f.served <- srv.Run(ctx) }()
	return nil
}

// workerName is c1, c2, … for normal workers and "slow" for the slow one.
func workerName(i int, w workerSpec) string {
	if w.Slow {
		return "slow"
	}
	return "c" + strconv.Itoa(i+1)
}

func (f *fleet) startWorker(cfg *Config, i int, w workerSpec, secretFile string) error {
	name := workerName(i, w)
	args := append(append([]string(nil), cfg.ExeArgs...), "--server", f.client.URL(), "--threads",
		strconv.Itoa(w.Threads), "--transport", w.Transport, "--name", name, "--secret-file", secretFile,
		"--log-level", "warn")
	cmd := exec.Command(cfg.Exe, args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	// If the bench dies without cleaning up, its workers die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(f.tmp, name+".log"))
	if err != nil {
		return fmt.Errorf("paper: worker log: %w", err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("paper: start worker %s: %w", name, err)
	}
	f.procs, f.workers = append(f.procs, cmd), append(f.workers, name)
	switch {
	case w.Slow:
		return f.throttle(cmd.Process.Pid, name, cfg.SlowQuota())
	case w.Machine && cfg.MachineCPUs > 0:
		return f.throttle(cmd.Process.Pid, name, cfg.MachineCPUs)
	}
	return nil
}

func (f *fleet) throttle(pid int, name string, cpus float64) error {
	g, err := cpucg.New("paper-"+name, cpus)
	if err != nil {
		return err
	}
	f.groups = append(f.groups, g)
	return g.Add(pid)
}

// waitUp waits until n workers have their association up.
func (f *fleet) waitUp(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		ws, err := f.client.Workers(ctx)
		up := 0
		for _, w := range ws {
			if w.State == api.WorkerUp {
				up++
			}
		}
		if err == nil && up == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("paper: %d of %d workers up (logs in %s): %w (last: %v)", up, n, f.tmp, ctx.Err(), err)
		case err := <-f.served:
			f.served <- err // close reads it again
			return fmt.Errorf("paper: server stopped: %w", err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// close stops the workers (SIGTERM, then SIGKILL), the server, and removes
// the cgroups and the temporary directory.
func (f *fleet) close() error {
	var errs []error
	for _, c := range f.procs {
		errs = append(errs, stop(c))
	}
	for _, g := range f.groups {
		errs = append(errs, g.Remove())
	}
	if f.cancel != nil {
		f.cancel()
		if err := <-f.served; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, server.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if f.tmp != "" {
		os.RemoveAll(f.tmp)
	}
	return errors.Join(errs...)
}

func stop(c *exec.Cmd) error {
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(5 * time.Second):
		_ = c.Process.Kill()
		<-done
		return fmt.Errorf("paper: worker %d did not stop on SIGTERM", c.Process.Pid)
	}
}
