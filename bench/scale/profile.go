package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"time"
)

// serverProfileDelay is how long after the job's submission the server's
// CPU profile starts: past the job's first placements, so that it shows
// the steady state.
const serverProfileDelay = 2 * time.Second

// serverProfileSpan is how long the server's CPU profile runs.
const serverProfileSpan = 10 * time.Second

// profiles takes the CPU profiles Config.CPUProfile asks for while a job
// runs: this process's from start until stop, and the server's for
// serverProfileSpan from serverProfileDelay after start.
type profiles struct {
	f    *os.File
	done chan error // the server's profile, once written
}

// startProfiles starts the profiles into path and path.server; debug is the
// server's --pprof address.
func startProfiles(ctx context.Context, path, debug string) (*profiles, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("scale: --cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("scale: --cpuprofile: %w", err)
	}
	p := &profiles{f: f, done: make(chan error, 1)}
	go func() { p.done <- serverProfile(ctx, debug, path+".server") }()
	return p, nil
}

// stop ends this process's profile and waits for the server's.
func (p *profiles) stop() error {
	pprof.StopCPUProfile()
	err := p.f.Close()
	if serr := <-p.done; serr != nil {
		return serr
	}
	return err
}

// serverProfile writes the server's CPU profile to path.
func serverProfile(ctx context.Context, debug, path string) error {
	if err := sleep(ctx, serverProfileDelay); err != nil {
		return err
	}
	u := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debug, int(serverProfileSpan/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scale: the server's profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scale: the server's profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("scale: the server's profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("scale: the server's profile: %w", err)
	}
	return f.Close()
}
