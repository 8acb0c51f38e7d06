package userop

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/braidhq/braid/api"
	"github.com/tetratelabs/wazero"
	wapi "github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// module is a compiled module in its own wazero runtime (whose memory
// limit is the key's), with the reactor instances it keeps idle.
type module struct {
	key moduleKey
	rt  wazero.Runtime
	cm  wazero.CompiledModule

	// users, used and evicted are guarded by Runtime.mu.
	users   int
	used    uint64
	evicted bool

	mu   sync.Mutex // guards idle
	idle []*instance
}

// maxIdle bounds a module's idle reactor instances: about one per worker
// thread.
const maxIdle = 64

func (m *module) close() {
	ctx := context.Background()
	m.mu.Lock()
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	for _, in := range idle {
		in.mod.Close(ctx)
	}
	m.rt.Close(ctx)
}

// run runs one unit.
func (m *module) run(ctx context.Context, op string, inv Invocation, input []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, inv.Timeout)
	defer cancel()
	if inv.ABI == api.ABIReactor {
		return m.runReactor(ctx, cancel, op, inv, input)
	}
	std := newStdio(inv.MaxOutput, cancel)
	std.in.Reset(input)
	cfg := wazero.NewModuleConfig().WithName("").WithArgs(inv.Args(op)...).
		WithStdin(&std.in).WithStdout(&std.out).WithStderr(&std.err).
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
	mod, err := m.rt.InstantiateModule(ctx, m.cm, cfg)
	if mod != nil {
		mod.Close(context.Background())
	}
	if err := std.outcome(ctx, err, inv); err != nil {
		return nil, err
	}
	return std.out.buf.Bytes(), nil
}

// instance is a reactor's instance with the stdio it was made with,
// refilled for each unit.
type instance struct {
	mod wapi.Module
	run wapi.Function
	io  *stdio
}

// runReactor runs one unit on an idle instance, or a new one, and keeps
// the instance for the next unit if the unit succeeded.
func (m *module) runReactor(ctx context.Context, cancel context.CancelFunc, op string, inv Invocation, input []byte) ([]byte, error) {
	in, err := m.instance(ctx)
	if err != nil {
		return nil, err
	}
	params := []byte(strings.Join(inv.Args(op)[1:], "\n"))
	in.io.reset(inv.MaxOutput, cancel)
	in.io.in.Reset(append(input[:len(input):len(input)], params...))
	res, err := in.run.Call(ctx, uint64(len(input)), uint64(len(params)))
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit):
		err = fmt.Errorf("the reactor exited (status %d) instead of returning from braid_run%s", exit.ExitCode(), in.io.err.text())
	case err == nil && uint32(res[0]) != 0:
		err = sys.NewExitError(uint32(res[0]))
	}
	if err := in.io.outcome(ctx, err, inv); err != nil || in.mod.IsClosed() {
		in.mod.Close(context.Background()) // its state is suspect
		if err == nil {
			err = errors.New("the reactor closed itself")
		}
		return nil, err
	}
	out := bytes.Clone(in.io.out.buf.Bytes())
	m.mu.Lock()
	if len(m.idle) < maxIdle {
		m.idle, in = append(m.idle, in), nil
	}
	m.mu.Unlock()
	if in != nil {
		in.mod.Close(context.Background())
	}
	return out, nil
}

// instance takes an idle reactor instance or makes one, running its
// _initialize.
func (m *module) instance(ctx context.Context) (*instance, error) {
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		in := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return in, nil
	}
	m.mu.Unlock()
	io := newStdio(MaxOutput, func() {})
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions(reactorInit).
		WithStdin(&io.in).WithStdout(&io.out).WithStderr(&io.err).
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
	mod, err := m.rt.InstantiateModule(ctx, m.cm, cfg) // the unit's limits bound _initialize too
	if err != nil {
		if mod != nil {
			mod.Close(context.Background())
		}
		return nil, fmt.Errorf("starting the reactor: %w%s", err, io.err.text())
	}
	run := mod.ExportedFunction(reactorRun)
	if run == nil { // Check saw to it at registration; a unit may still claim the ABI
		mod.Close(context.Background())
		return nil, errors.New("the module does not export braid_run: it is not a reactor")
	}
	return &instance{mod: mod, run: run, io: io}, nil
}

// stdio is a sandbox's standard streams: the unit's input, its output
// up to a limit, and the tail of its error output.
type stdio struct {
	in  bytes.Reader
	out capped
	err tail
}

func newStdio(limit int64, stop func()) *stdio {
	s := &stdio{}
	s.reset(limit, stop)
	return s
}

func (s *stdio) reset(limit int64, stop func()) {
	s.out = capped{limit: limit, stop: stop, buf: s.out.buf}
	s.out.buf.Reset()
	s.err.reset()
}

// outcome turns how a run ended into the unit's error, or nil.
func (s *stdio) outcome(ctx context.Context, err error, inv Invocation) error {
	var exit *sys.ExitError
	switch {
	case s.out.over:
		return fmt.Errorf("the output passed its limit of %d bytes", inv.MaxOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the unit ran past its time limit of %v and was stopped%s", inv.Timeout, s.err.text())
	case ctx.Err() != nil:
		return fmt.Errorf("the unit was stopped: %w", ctx.Err())
	case err == nil:
		return nil
	case errors.As(err, &exit):
		if exit.ExitCode() == 0 {
			return nil
		}
		return fmt.Errorf("exit status %d%s%s", exit.ExitCode(), memoryHint(s.err.head, inv), s.err.text())
	}
	msg := err.Error()
	if i := strings.Index(msg, "wasm error: "); i >= 0 {
		msg = msg[i:]
	}
	return fmt.Errorf("the module trapped: %s%s", firstLine(msg), s.err.text())
}

// memoryHint points at the limit when a module says it ran out of memory.
func memoryHint(stderr []byte, inv Invocation) string {
	if bytes.Contains(stderr, []byte("out of memory")) {
		return fmt.Sprintf(" (the operation's memory limit is %d MiB)", inv.MemoryMiB)
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// capped collects output up to limit bytes; past it, it stops the module.
type capped struct {
	buf   bytes.Buffer
	limit int64
	over  bool
	stop  func()
}

func (c *capped) Write(p []byte) (int, error) {
	if c.over || int64(c.buf.Len())+int64(len(p)) > c.limit {
		c.over = true
		c.stop()
		return 0, io.ErrShortWrite
	}
	return c.buf.Write(p)
}

// tail keeps the first headBytes and the last tailBytes written: the
// reason a program gives usually comes first (Go's "panic: …" before its
// goroutines) and a log's last lines last.
type tail struct {
	head, buf []byte
	cut       bool
}

const (
	headBytes = 1536
	tailBytes = 512
)

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if room := headBytes - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head, p = append(t.head, p[:k]...), p[k:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf, t.cut = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...), true
	}
	return n, nil
}

func (t *tail) reset() { t.head, t.buf, t.cut = t.head[:0], t.buf[:0], false }

func (t *tail) bytes() []byte {
	out := slices.Clone(t.head)
	if t.cut {
		out = append(out, " … "...)
	}
	return append(out, t.buf...)
}

// text is the tail as a suffix for an error message.
func (t *tail) text() string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.bytes()), "?"))
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
