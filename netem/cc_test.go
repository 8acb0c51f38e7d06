package netem

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdBed takes the test bed's lock, waiting while another test (of this
// package or another) has the bed, so that nothing else changes the root
// namespace's sysctls meanwhile. Release it before Up.
func holdBed(t *testing.T) (release func()) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("needs root: %v", err)
	}
	lock, err := takeLock(DefaultStateDir)
	for deadline := time.Now().Add(5 * time.Minute); errors.Is(err, ErrBusy) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		lock, err = takeLock(DefaultStateDir)
	}
	if err != nil {
		t.Skipf("the test bed stayed busy: %v", err)
	}
	return func() { lock.Close() }
}

// unallowedCC returns a congestion control the kernel has that the root
// namespace does not allow, and the allowed list, which must be exactly
// as it is when the test ends. On a machine that allows all it has, it
// takes one off the list (the host's default and reno cannot be) and puts
// the list back when t ends. The caller holds the bed's lock.
func unallowedCC(t *testing.T) (name, allowed string) {
	t.Helper()
	have, err := AvailableCC()
	if err != nil {
		t.Fatal(err)
	}
	orig := mustSysctl(t, sysctlAllowedCC)
	def := mustSysctl(t, "net.ipv4.tcp_congestion_control")
	for _, n := range have {
		if !slices.Contains(strings.Fields(orig), n) {
			return n, orig
		}
	}
	for _, n := range have {
		if n == def || n == "reno" {
			continue
		}
		narrowed := strings.Join(slices.DeleteFunc(strings.Fields(orig), func(s string) bool { return s == n }), " ")
		if err := writeSysctl(sysctlAllowedCC, narrowed); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = writeSysctl(sysctlAllowedCC, orig) })
		return n, mustSysctl(t, sysctlAllowedCC)
	}
	t.Skipf("the kernel has no congestion control but reno and the default (%s)", have)
	return "", ""
}

func mustSysctl(t *testing.T, key string) string {
	t.Helper()
	v, err := readSysctl(key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAllowCCRestores: allowCC adds a congestion control to the root
// namespace's allowed list and records the old list first; restoreSysctls
// puts it back exactly and removes the record; a list someone changed
// again since is theirs and stays.
func TestAllowCCRestores(t *testing.T) {
	release := holdBed(t)
	defer release()
	name, allowed := unallowedCC(t)
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)

	if err := allowCC(dir, name, log); err != nil {
		t.Fatal(err)
	}
	if now := mustSysctl(t, sysctlAllowedCC); !slices.Contains(strings.Fields(now), name) {
		t.Fatalf("allowed %q after allowCC(%s)", now, name)
	}
	if _, err := os.Stat(filepath.Join(dir, sysctlRecordFile)); err != nil {
		t.Fatalf("no record of the change: %v", err)
	}
	if err := allowCC(dir, name, log); err != nil { // allowed already: no change, no new record
		t.Fatal(err)
	}
	if err := restoreSysctls(dir, log); err != nil {
		t.Fatal(err)
	}
	if now := mustSysctl(t, sysctlAllowedCC); now != allowed {
		t.Fatalf("allowed %q after restore, want %q as before", now, allowed)
	}
	if _, err := os.Stat(filepath.Join(dir, sysctlRecordFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record left after restore: %v", err)
	}

	// Changed again after the bed set it: left as it is. (The record is
	// made to say the bed set another value than the one there now.)
	if err := allowCC(dir, name, log); err != nil {
		t.Fatal(err)
	}
	theirs := mustSysctl(t, sysctlAllowedCC)
	rec := mustRecord(t, dir)
	rec.Changes[0].Set = "reno"
	if err := writeRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	if err := restoreSysctls(dir, log); err != nil {
		t.Fatal(err)
	}
	if now := mustSysctl(t, sysctlAllowedCC); now != theirs {
		t.Errorf("allowed %q, want %q: a value set since the bed's is not the bed's to undo", now, theirs)
	}
	if err := writeSysctl(sysctlAllowedCC, allowed); err != nil {
		t.Fatal(err)
	}
}

func mustRecord(t *testing.T, dir string) sysctlRecord {
	t.Helper()
	var rec sysctlRecord
	b, err := os.ReadFile(filepath.Join(dir, sysctlRecordFile))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil || len(rec.Changes) != 1 {
		t.Fatalf("record: %+v, %v", rec, err)
	}
	return rec
}

// TestBedCC: a bed with cc=NAME, NAME a congestion control the root
// namespace does not allow, comes up; both namespaces run NAME (a TCP
// connection between them has it at both ends); Close puts the allowed
// list back exactly. A killed bed's change is undone by Down, and by the
// next Up. An unknown name is refused with what the kernel has.
func TestBedCC(t *testing.T) {
	release := holdBed(t)
	name, allowed := unallowedCC(t)
	release()

	b := upBed(t, "rtt=2ms,cc="+name)
	for _, ns := range []string{NSA, NSB} {
		var got string
		if err := InNS(ns, func() (err error) { got, err = readSysctl("net.ipv4.tcp_congestion_control"); return err }); err != nil {
			t.Fatal(err)
		}
		if got != name {
			t.Errorf("%s: tcp_congestion_control %q, want %q", ns, got, name)
		}
	}
	a, _ := PathAddrs(0)
	ln := listenIn(t, NSA, func() (net.Listener, error) { return net.Listen("tcp", a.String()+":0") })
	defer ln.Close()
	var c net.Conn
	if err := InNS(NSB, func() (err error) { c, err = net.Dial("tcp", ln.Addr().String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := c.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	for side, conn := range map[string]net.Conn{"dialer": c, "acceptor": s} {
		if got := socketCC(t, conn); got != name {
			t.Errorf("%s's socket runs %q, want %q", side, got, name)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if now := mustSysctl(t, sysctlAllowedCC); now != allowed {
		t.Fatalf("allowed %q after Close, want %q", now, allowed)
	}

	// A killed bed: its record, and the change, stay behind.
	killed := func() {
		release := holdBed(t)
		defer release()
		if err := allowCC(DefaultStateDir, name, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	}
	killed()
	if err := Down(Options{}); err != nil {
		t.Fatal(err)
	}
	if now := mustSysctl(t, sysctlAllowedCC); now != allowed {
		t.Fatalf("allowed %q after Down, want %q", now, allowed)
	}
	killed()
	b = upBed(t, "rtt=2ms") // no cc=: the leftover change is undone, none made
	if now := mustSysctl(t, sysctlAllowedCC); now != allowed {
		t.Fatalf("allowed %q with a bed up after a killed one, want %q", now, allowed)
	}
	b.Close()

	spec, err := Parse("rtt=2ms,cc=nosuchcc")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := Up(spec, Options{Wait: 5 * time.Minute}); err == nil || !strings.Contains(err.Error(), "no such TCP congestion control") {
		if b != nil {
			b.Close()
		}
		t.Fatalf("cc=nosuchcc: %v, want an error that says the kernel has no such congestion control", err)
	}
	if Exists() {
		t.Error("namespaces left after a refused Up")
	}
}

// socketCC reads a TCP socket's congestion control (TCP_CONGESTION).
func socketCC(t *testing.T, c net.Conn) string {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var gerr error
	rc.Control(func(fd uintptr) { name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return strings.TrimRight(name, "\x00")
}
