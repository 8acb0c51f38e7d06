package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/netem/relay"
)

// cluster is the server and the workers under test, each worker behind a
// relay that its data-plane traffic goes through.
type cluster struct {
	cfg     *Config
	url     string
	token   string // the server's first admin token
	server  *proc
	workers []*proc
	relays  []*relay.Relay
	names   []string
	env     []string // the workers' environment and liveness, for addWorker again
	live    string
}

const secret = "braid chaos secret"

// drainTimeout bounds the server's and the workers' graceful stops; a stop
// that outlasts it by stopSlack breaks an invariant.
const (
	drainTimeout = 5 * time.Second
	stopSlack    = 10 * time.Second
)

func startCluster(cfg *Config) (*cluster, error) {
	env := []string{"BRAID_SECRET=" + secret}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &cluster{cfg: cfg, url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	live := cfg.Liveness.String()
	c.env, c.live = env, live
	c.server = newProc(cfg.Dir, "server", cfg.Exe, env, "server", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--data", filepath.Join(cfg.Dir, "data"), "--heartbeat-timeout", "30s", "--liveness", live,
		"--drain-timeout", drainTimeout.String())
	if err := c.server.start(); err != nil {
		return nil, err
	}
	if c.token, err = readToken(filepath.Join(cfg.Dir, "data", api.AdminTokenFile), 15*time.Second); err != nil {
		c.close()
		return nil, err
	}
	for i := range cfg.Workers {
		if err := c.addWorker(i, env, live); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// addWorker starts worker i listening on a port of its own and reached
// through a relay, whose address it advertises. Called again for a worker
// that exists, it replaces it (and its relay) on a new port.
func (c *cluster) addWorker(i int, env []string, live string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	r, err := relay.New(fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	name := fmt.Sprintf("w%d", i+1)
	p := newProc(c.cfg.Dir, name, c.cfg.Exe, env, "worker", "--server", c.url, "--name", name,
		"--threads", strconv.Itoa(c.cfg.Threads), "--transport", c.cfg.Transport,
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--advertise", r.Addr(), "--liveness", live,
		"--drain-timeout", drainTimeout.String())
	if i < len(c.workers) {
		c.relays[i].Close()
		c.relays[i], c.workers[i] = r, p
	} else {
		c.relays, c.workers, c.names = append(c.relays, r), append(c.workers, p), append(c.names, name)
	}
	return p.start()
}

// waitUp waits until every worker is up on the server. A worker that
// exited because another process took its port between freePort and its
// bind (tests run side by side) is started again on a new one.
func (c *cluster) waitUp(ctx context.Context, o *observer, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		next := time.Now().Add(250 * time.Millisecond)
		if next.After(deadline) {
			next = deadline
		}
		wctx, cancel := context.WithDeadline(ctx, next)
		_, ok := o.waitFor(wctx, func(v map[string]api.Worker) bool { return allUp(v, c.names) })
		cancel()
		switch {
		case ok:
			return nil
		case ctx.Err() != nil || !time.Now().Before(deadline):
			return fmt.Errorf("chaos: workers not all up after %v (logs in %s)", d, c.cfg.Dir)
		}
		for i, p := range c.workers {
			if p.hasExited() && lostPort(p.logPath) {
				if err := c.addWorker(i, c.env, c.live); err != nil {
					return err
				}
			}
		}
	}
}

// lostPort reports whether the last run logged at path failed to bind its
// port because something else held it.
func lostPort(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	last := b[bytes.LastIndex(b, []byte("=== "))+1:]
	return bytes.Contains(last, []byte("address already in use"))
}

// close stops every process (gracefully, then by force) and every relay.
func (c *cluster) close() {
	for _, r := range c.relays {
		r.Block(false)
	}
	for _, w := range c.workers {
		w.stop(5 * time.Second)
	}
	if c.server != nil {
		c.server.stop(15 * time.Second)
	}
	for _, r := range c.relays {
		r.Close()
	}
}

// logTail returns the end of a process's log, for a failure report.
func logTail(p *proc, n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// readToken waits up to d for the server to write its first admin token to
// path, and returns it.
func readToken(path string, d time.Duration) (string, error) {
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(path)
		if tok := strings.TrimSpace(string(b)); err == nil && tok != "" {
			return tok, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("chaos: the server wrote no admin token to %s within %v: %v", path, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
