package userop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"runtime"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
)

func sec(id byte, body ...byte) []byte {
	return append([]byte{id, byte(len(body))}, body...)
}

// tableModule is a command whose _start grows its table (funcref, min 1,
// no maximum unless max is given) by 2³¹-1 entries, which without a bound
// would cost 16 GiB outside the memory limit.
func tableModule(max ...byte) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, 1, 0x60, 0, 0)...) // type func() ()
	m = append(m, sec(3, 1, 0)...)          // one function of type 0
	limits := []byte{0, 1}                  // no max, min 1
	if len(max) > 0 {
		limits = append([]byte{1, 1}, max...)
	}
	m = append(m, sec(4, append([]byte{1, 0x70}, limits...)...)...)
	m = append(m, sec(7, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0)...)
	body := []byte{0, 0xd0, 0x70, 0x41, 0xff, 0xff, 0xff, 0xff, 0x07, 0xfc, 0x0f, 0, 0x1a, 0x0b} // ref.null func; i32.const 2³¹-1; table.grow 0; drop
	return append(m, sec(10, append([]byte{1, byte(len(body))}, body...)...)...)
}

func TestBoundTables(t *testing.T) {
	m := tableModule()
	b := boundTables(m)
	if bytes.Equal(b, m) || !bytes.Contains(b, []byte{0x70, 1, 1, 1}) {
		t.Fatalf("the table was not given a maximum: % x", b)
	}
	if err := vet(b); err != nil {
		t.Fatal(err)
	}
	if with := tableModule(2); !bytes.Equal(boundTables(with), with) {
		t.Fatal("a table with a maximum was rewritten")
	}
	if err := vet(tableModule(0x81, 0xad, 0xe2, 0x04)); err == nil || !strings.Contains(err.Error(), "tables of more than") { // 10,000,001
		t.Fatalf("a table of 10M entries: %v", err)
	}
	// Growing the bounded table fails (table.grow answers -1) instead of
	// allocating 16 GiB.
	var ms runtime.MemStats
	r, err := NewRuntime(Config{Fetch: func(context.Context, [32]byte) ([]byte, error) { return m, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Run(t.Context(), "grow", sha256.Sum256(m), NewInvocation(api.ABICommand, api.OpLimits{MemoryMiB: 1}, 0, nil), nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	if ms.Sys > 4<<30 {
		t.Fatalf("the process holds %d GiB", ms.Sys>>30)
	}
	if err := Check(t.Context(), m, api.ABICommand, 1); err != nil {
		t.Fatalf("the server's check of a Go-like unbounded table: %v", err)
	}
}

func TestVetSignedConstants(t *testing.T) {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(5, 1, 0, 1)...) // memory, min 1 page
	// An active data segment at i32.const -1 written in five bytes: valid
	// to decode (it traps at instantiation as out of bounds).
	m = append(m, sec(11, 1, 0, 0x41, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x0b, 1, 'x')...)
	if err := vet(m); err != nil {
		t.Fatalf("a five-byte negative i32.const: %v", err)
	}
}
