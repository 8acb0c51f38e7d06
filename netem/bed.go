package netem

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultStateDir holds the lock and state.json of the running test bed.
const DefaultStateDir = "/run/braid-net"

// Options tune a test bed. The zero value means the defaults.
type Options struct {
	// StateDir holds the lock and state file (default DefaultStateDir).
	StateDir string
	// Logger receives the bed's events (default: discard).
	Logger *slog.Logger
	// Wait is how long Up waits for a bed that another process holds to
	// go before it returns ErrBusy (default: not at all). Tests that
	// each need the bed take turns this way.
	Wait time.Duration
}

func (o Options) withDefaults() Options {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Errors of Up.
var (
	// ErrUnsupported: not root, not Linux, or no /dev/net/tun.
	ErrUnsupported = errors.New("netem: the test bed needs root on Linux with /dev/net/tun")
	// ErrBusy: another live process owns the test bed.
	ErrBusy = errors.New("netem: a test bed is already up")
)

// Check reports whether this process can build a test bed, and if not why
// (an error wrapping ErrUnsupported).
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrUnsupported)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("%w: no network namespaces: %v", ErrUnsupported, err)
	}
	return nil
}

// PathInfo is one path as set up: its devices and addresses.
type PathInfo struct {
	Index int        `json:"index"`
	DevA  string     `json:"dev_a"`
	DevB  string     `json:"dev_b"`
	AddrA netip.Addr `json:"addr_a"`
	AddrB netip.Addr `json:"addr_b"`
	MTU   int        `json:"mtu"`
	AB    string     `json:"ab"` // the model of each direction, as Dir.String
	BA    string     `json:"ba"`
}

// PathAddrs are path i's addresses in braid-a and braid-b.
func PathAddrs(i int) (a, b netip.Addr) {
	return netip.AddrFrom4([4]byte{10, 77, byte(i), 1}), netip.AddrFrom4([4]byte{10, 77, byte(i), 2})
}

// Bed is a running test bed: the namespaces, the TUN devices and the
// emulator between them. Close tears it down.
type Bed struct {
	spec  Spec
	opts  Options
	lock  *os.File
	paths []PathInfo
	tuns  []*os.File
	pipes []*pipe // two per path: a to b, then b to a
	start time.Time

	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Up builds the test bed of spec: it takes the lock, removes what a
// killed owner left, creates the namespaces and paths and starts the
// emulator. The bed lives until Close (or this process's end, which
// removes the devices but not the namespaces: the next Up or Down does).
func Up(spec Spec, opts Options) (*Bed, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if len(spec.Paths) == 0 {
		spec.Paths = []Path{{MTU: DefaultMTU}}
	}
	b := &Bed{spec: spec, opts: opts.withDefaults(), done: make(chan struct{}), start: time.Now()}
	lock, err := takeLock(b.opts.StateDir)
	for deadline := time.Now().Add(b.opts.Wait); errors.Is(err, ErrBusy) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		lock, err = takeLock(b.opts.StateDir)
	}
	if err != nil {
		return nil, err
	}
	b.lock = lock
	if err := b.build(); err != nil {
		b.teardown()
		return nil, err
	}
	b.run()
	return b, nil
}

// build removes leftovers and creates the namespaces and paths.
func (b *Bed) build() error {
	if err := restoreSysctls(b.opts.StateDir, b.opts.Logger); err != nil {
		return fmt.Errorf("%w (left by a killed bed)", err)
	}
	if b.spec.CC != "" {
		if err := allowCC(b.opts.StateDir, b.spec.CC, b.opts.Logger); err != nil {
			return err
		}
	}
	for _, ns := range []string{NSA, NSB} {
		if nsExists(ns) {
			b.opts.Logger.Info("removing a leftover namespace", "ns", ns)
		}
		if err := removeNS(ns); err != nil {
			return err
		}
		if err := ip("netns", "add", ns); err != nil {
			return err
		}
		if err := ip("-n", ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
		if b.spec.CC != "" {
			if err := sysctl(ns, "net.ipv4.tcp_congestion_control", b.spec.CC); err != nil {
				return err
			}
		}
	}
	for i, p := range b.spec.Paths {
		if err := b.addPath(i, p); err != nil {
			return err
		}
	}
	return b.multipath()
}

// multipath sets up the kernel's MPTCP path manager in both namespaces for
// a bed of several paths: braid-a announces its address on each path but
// the first (an ADD_ADDR "signal" endpoint), and both ends accept as many
// subflows and announcements as there are paths. So an MPTCP connection
// from braid-b to 10.77.0.1 opens a subflow to 10.77.i.1, through path i,
// for every other path; the listener must be bound to all of braid-a's
// addresses (0.0.0.0) for the subflows to reach it. A kernel without MPTCP
// leaves nothing to set up.
func (b *Bed) multipath() error {
	n := len(b.spec.Paths)
	if n < 2 || !mptcpAvailable() {
		return nil
	}
	for _, ns := range []string{NSA, NSB} {
		if err := ip("-n", ns, "mptcp", "limits", "set", "subflows", strconv.Itoa(n), "add_addr_accepted", strconv.Itoa(n)); err != nil {
			return err
		}
	}
	for _, p := range b.paths[1:] {
		if err := ip("-n", NSA, "mptcp", "endpoint", "add", p.AddrA.String(), "dev", p.DevA, "signal"); err != nil {
			return err
		}
	}
	return nil
}

// mptcpAvailable reports whether the kernel has MPTCP.
func mptcpAvailable() bool {
	_, err := os.Stat("/proc/sys/net/mptcp/enabled")
	return err == nil
}

// addPath creates path i's two TUN devices, moves each into its namespace
// and addresses it.
func (b *Bed) addPath(i int, p Path) error {
	addrA, addrB := PathAddrs(i)
	info := PathInfo{Index: i, DevA: NSA + strconv.Itoa(i), DevB: NSB + strconv.Itoa(i),
		AddrA: addrA, AddrB: addrB, MTU: p.MTU, AB: p.AB.String(), BA: p.BA.String()}
	for _, end := range []struct{ ns, dev, local, peer string }{
		{NSA, info.DevA, addrA.String(), addrB.String()},
		{NSB, info.DevB, addrB.String(), addrA.String()},
	} {
		f, err := openTUN(end.dev)
		if err != nil {
			return err
		}
		b.tuns = append(b.tuns, f)
		steps := [][]string{
			{"link", "set", "dev", end.dev, "netns", end.ns},
			{"-n", end.ns, "addr", "add", end.local + "/32", "peer", end.peer + "/32", "dev", end.dev},
			{"-n", end.ns, "link", "set", "dev", end.dev, "mtu", strconv.Itoa(p.MTU), "txqueuelen", "1000", "up"},
		}
		for _, s := range steps {
			if err := ip(s...); err != nil {
				return err
			}
		}
	}
	b.paths = append(b.paths, info)
	return nil
}

// run starts the emulator: two pipes per path and the state writer.
func (b *Bed) run() {
	seed := b.spec.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	c := newClock()
	for i, p := range b.spec.Paths {
		ta, tb := b.tuns[2*i], b.tuns[2*i+1]
		ab := newPipe(ta, tb, newModel(p.AB, p.RTT(), p.MTU, seed+uint64(2*i)), p.MTU, c)
		ba := newPipe(tb, ta, newModel(p.BA, p.RTT(), p.MTU, seed+uint64(2*i+1)), p.MTU, c)
		b.pipes = append(b.pipes, ab, ba)
	}
	for _, p := range b.pipes {
		b.wg.Go(func() {
			if err := p.read(); err != nil {
				b.opts.Logger.Error("emulator read", "err", err)
			}
		})
		b.wg.Go(func() { _ = p.write(b.done) })
	}
	b.wg.Go(b.writeStateLoop)
}

// Cut black-holes path i in both directions while cut is true, as a
// failed link or router would: packets are dropped without a word, so the
// ends notice only by what stops arriving. Packets already on the path
// are still delivered.
func (b *Bed) Cut(i int, cut bool) {
	b.pipes[2*i].cut.Store(cut)
	b.pipes[2*i+1].cut.Store(cut)
}

// Paths describes the bed's paths.
func (b *Bed) Paths() []PathInfo { return append([]PathInfo(nil), b.paths...) }

// Spec is the spec the bed runs.
func (b *Bed) Spec() Spec { return b.spec }

// PathStats are one path's counters.
type PathStats struct {
	AB DirStats `json:"ab"`
	BA DirStats `json:"ba"`
}

// Stats returns every path's counters.
func (b *Bed) Stats() []PathStats {
	out := make([]PathStats, len(b.paths))
	for i := range out {
		out[i] = PathStats{AB: b.pipes[2*i].stats(), BA: b.pipes[2*i+1].stats()}
	}
	return out
}

// Close stops the emulator and removes the namespaces (killing what still
// runs in them) and the devices. It is safe to call more than once.
func (b *Bed) Close() error {
	b.closeOnce.Do(func() {
		for _, p := range b.pipes {
			p.stopping.Store(true)
		}
		close(b.done)
		b.closeTUNs()
		b.wg.Wait()
		b.closeErr = b.teardown()
	})
	return b.closeErr
}

// closeTUNs closes the devices, which the kernel then removes; a pending
// read returns.
func (b *Bed) closeTUNs() {
	for _, f := range b.tuns {
		f.Close()
	}
}

// teardown closes the devices, removes the namespaces and the state file,
// puts back the sysctls it changed and releases the lock.
func (b *Bed) teardown() error {
	b.closeTUNs()
	var errs []error
	for _, ns := range []string{NSA, NSB} {
		errs = append(errs, removeNS(ns))
	}
	if b.lock != nil {
		errs = append(errs, restoreSysctls(b.opts.StateDir, b.opts.Logger))
		os.Remove(filepath.Join(b.opts.StateDir, stateFile))
		b.lock.Close() // releases the flock
	}
	return errors.Join(errs...)
}

// takeLock takes the test bed's exclusive lock, or says who holds it.
func takeLock(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("netem: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("netem: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			if st, err := ReadState(dir); err == nil {
				return nil, fmt.Errorf("%w (pid %d, %q); stop it first (braid net down)", ErrBusy, st.PID, st.Spec)
			}
			return nil, fmt.Errorf("%w; stop it first (braid net down)", ErrBusy)
		}
		return nil, fmt.Errorf("netem: lock: %w", err)
	}
	return f, nil
}

// Down removes a test bed that no live process owns (what a killed run
// left): its namespaces, and its changes to the root namespace's sysctls.
// If a live process owns one it returns ErrBusy with its pid.
func Down(opts Options) error {
	opts = opts.withDefaults()
	if err := Check(); err != nil {
		return err
	}
	lock, err := takeLock(opts.StateDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	os.Remove(filepath.Join(opts.StateDir, stateFile))
	return errors.Join(removeNS(NSA), removeNS(NSB), restoreSysctls(opts.StateDir, opts.Logger))
}

// Exists reports whether either namespace of a test bed exists.
func Exists() bool { return nsExists(NSA) || nsExists(NSB) }

// stateFile, in the state directory, is the live bed's State.
const stateFile = "state.json"

// State is what the owner of a running bed publishes: its spec, paths and
// counters, rewritten every stateEvery.
type State struct {
	PID     int         `json:"pid"`
	Spec    string      `json:"spec"`
	Started time.Time   `json:"started"`
	Updated time.Time   `json:"updated"`
	Paths   []PathInfo  `json:"paths"`
	Stats   []PathStats `json:"stats"`
}

const stateEvery = 500 * time.Millisecond

func (b *Bed) writeState() error {
	st := State{PID: os.Getpid(), Spec: b.spec.Source, Started: b.start, Updated: time.Now(),
		Paths: b.paths, Stats: b.Stats()}
	buf, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(b.opts.StateDir, stateFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (b *Bed) writeStateLoop() {
	t := time.NewTicker(stateEvery)
	defer t.Stop()
	for {
		if err := b.writeState(); err != nil {
			b.opts.Logger.Warn("state file", "err", err)
		}
		select {
		case <-t.C:
		case <-b.done:
			return
		}
	}
}

// ReadState reads the state a running bed's owner publishes.
func ReadState(dir string) (State, error) {
	if dir == "" {
		dir = DefaultStateDir
	}
	var st State
	buf, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(buf, &st)
	return st, err
}

// Alive reports whether a live process holds the test bed's lock in dir
// (default DefaultStateDir).
func Alive(dir string) bool {
	if dir == "" {
		dir = DefaultStateDir
	}
	f, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}
