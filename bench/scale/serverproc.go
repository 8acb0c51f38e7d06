package scale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serverProc is `braid server` running as a child of this process, on
// fixed ports so that a restart comes back at the same address.
type serverProc struct {
	exe, dir, logPath string
	secretFile        string
	extra             []string // more flags for the server
	nice              int      // the server's nice value (priority.go)
	args              []string
	api, debug        string // host:port of the API and of --pprof

	mu     sync.Mutex // guards cmd and exited, which a restart replaces
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

func newServerProc(exe, dir, secret string, extra []string, nice int) (*serverProc, error) {
	// The server refuses a secret on its command line, where anyone can read it.
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	p := &serverProc{exe: exe, dir: dir, logPath: filepath.Join(dir, "server.log"), secretFile: secretFile, extra: extra, nice: nice}
	return p, p.pickPorts()
}

// pickPorts gives the server free ports for its API and --pprof.
func (p *serverProc) pickPorts() error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	p.setAddrs("127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1]))
	return nil
}

// setAddrs sets the server's API and --pprof addresses.
func (p *serverProc) setAddrs(api, debug string) {
	p.api, p.debug = api, debug
	p.args = append([]string{"server", "--listen", p.api, "--data", filepath.Join(p.dir, "data"), "--secret-file", p.secretFile,
		"--pprof", p.debug, "--log-level", "warn"}, p.extra...)
}

// firstStart starts the server the first time: if another process took
// one of its ports between freePorts and the server's listen (they were
// free when picked), it picks others and tries again, a few times.
func (p *serverProc) firstStart(ctx context.Context) error {
	for try := 1; ; try++ {
		err := p.start(ctx)
		if !errors.Is(err, errPortTaken) || try == 3 {
			return err
		}
		if err := p.pickPorts(); err != nil {
			return err
		}
	}
}

// healthClient asks a starting server for /healthz; its timeout keeps a
// process that took the server's port and does not answer from holding
// the start.
var healthClient = &http.Client{Timeout: 5 * time.Second}

// errPortTaken: the server exited at start since its port was in use.
var errPortTaken = errors.New("scale: a port picked for the server was taken before it listened")

// start runs the server and waits until it answers /healthz. The child
// dies with this process (PR_SET_PDEATHSIG).
func (p *serverProc) start(ctx context.Context) error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fi, err := logf.Stat()
	if err != nil {
		return err
	}
	logStart := fi.Size() // this start's lines come after
	fmt.Fprintf(logf, "=== %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(p.exe, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startNiced(cmd, p.nice); err != nil {
		return fmt.Errorf("scale: start server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := healthClient.Get("http://" + p.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-exited:
			if log, _ := os.ReadFile(p.logPath); bytes.Contains(log[min(logStart, int64(len(log))):], []byte("address already in use")) {
				return fmt.Errorf("%w (see %s)", errPortTaken, p.logPath)
			}
			return fmt.Errorf("scale: the server exited at start (see %s)", p.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scale: the server does not answer at %s (see %s)", p.api, p.logPath)
		}
	}
}

// running is the server process now, and a channel closed once it has
// exited; nil before start.
func (p *serverProc) running() (*exec.Cmd, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// pid is the server process's id (0 before start).
func (p *serverProc) pid() int {
	if cmd, _ := p.running(); cmd != nil {
		return cmd.Process.Pid
	}
	return 0
}

// kill sends SIGKILL and waits for the server to go.
func (p *serverProc) kill() {
	cmd, exited := p.running()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop asks the server to stop (SIGTERM) and kills it after grace.
func (p *serverProc) stop(grace time.Duration) {
	cmd, exited := p.running()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		p.kill()
	}
}

// adminToken is the token the server made at its first start.
func (p *serverProc) adminToken() (string, error) {
	b, err := os.ReadFile(filepath.Join(p.dir, "data", "admin.token"))
	if err != nil {
		return "", fmt.Errorf("scale: the server's admin token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// procStats are what /proc says of the server process.
type procStats struct {
	CPU      time.Duration // user + system
	RSS, HWM int64         // resident now and at its peak, bytes
	FDs      int
}

// clockTicks is the kernel's USER_HZ, which /proc/PID/stat counts in: 100
// on every Linux architecture braid runs on.
const clockTicks = 100

// stats reads the server's CPU time, memory and open files from /proc.
func (p *serverProc) stats() (procStats, error) { return p.statsOf(true) }

// statsOf is stats, with the open files only if fds (FDs is 0 otherwise):
// listing /proc/PID/fd takes a system call per few hundred descriptors,
// a sizeable cost at 10,000 connections if taken often.
func (p *serverProc) statsOf(fds bool) (procStats, error) {
	var st procStats
	cmd, _ := p.running()
	pid := strconv.Itoa(cmd.Process.Pid)
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return st, err
	}
	// The command name (field 2) may hold spaces: count from its ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return st, errors.New("scale: short /proc/PID/stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	st.CPU = time.Duration(ut+stime) * time.Second / clockTicks
	if st.RSS, st.HWM, err = memOf(pid); err != nil {
		return st, err
	}
	if !fds {
		return st, nil
	}
	list, err := os.ReadDir("/proc/" + pid + "/fd")
	st.FDs = len(list)
	return st, err
}

// memOf reads VmRSS and VmHWM of process pid, in bytes.
func memOf(pid string) (rss, hwm int64, err error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	return rss, hwm, sc.Err()
}

// memStats are the server's Go heap figures (its /debug/vars): Live is
// what its last collection found live.
type memStats struct {
	HeapInuse, HeapAlloc uint64
	NumGC                uint32
	Live                 uint64 `json:"-"`
}

// heap reads the server's Go heap; gc forces a collection first, so that
// Live is what is live now, not at the last collection.
func (p *serverProc) heap(ctx context.Context, gc bool) (memStats, error) {
	if gc { // the heap profile's ?gc=1 collects before it answers
		if err := get(ctx, "http://"+p.debug+"/debug/pprof/heap?gc=1", nil); err != nil {
			return memStats{}, err
		}
	}
	var vars struct {
		Memstats memStats
		Live     uint64 `json:"heap_live_bytes"`
	}
	err := get(ctx, "http://"+p.debug+"/debug/vars", &vars)
	vars.Memstats.Live = vars.Live
	return vars.Memstats, err
}

// get GETs url and decodes its JSON into out (nil: discards the body).
func get(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("scale: GET %s: %s", url, resp.Status)
	}
	if out == nil {
		_, err = bufio.NewReader(resp.Body).WriteTo(discard{})
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// freePorts finds n free loopback TCP ports.
func freePorts(n int) ([]int, error) {
	var out []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("scale: %w", err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
