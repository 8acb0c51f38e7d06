package e2e

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/userop/wasmtest"
)

// Module checks (issue 43, finding 6): a submit token could make the server
// compile any module it uploaded, two at a time, and compiling takes about
// 50 bytes of memory per byte of the largest function: a 63 MB module took
// the server to 3.6 GB. Now a module with a function too large to compile
// within the server's budget is refused with 413 before anything is
// compiled, a token checks one module at a time (a second gets 429), and
// the server grows by less than its 1 GiB check budget throughout.
func TestOpAddMemory(t *testing.T) {
	const maxGrowth = 1 << 30
	srv, admin := startServer(t)
	ctx := t.Context()
	tok, err := admin.CreateToken(ctx, api.TokenSpec{Role: api.RoleSubmit, Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(admin.URL()).WithToken(tok.Token)
	put := func(m []byte) string {
		o, err := c.Put(ctx, bytes.NewReader(m))
		if err != nil {
			t.Fatal(err)
		}
		return o.ID
	}
	huge := put(wasmtest.BigFunction(63 << 20))
	mid := put(wasmtest.BigFunction(4 << 20))

	pid := srv.cmd.Process.Pid
	base := rssBytes(t, pid)
	stop := make(chan struct{})
	peak := peakRSS(t, pid, stop)

	t0 := time.Now()
	_, err = c.AddOperation(ctx, api.OperationSpec{Name: "huge", Module: huge, ABI: api.ABICommand})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeTooLarge || !strings.Contains(ae.Message, "function") {
		t.Errorf("a module with a 63 MB function: %v after %v; want too_large saying which function", err, time.Since(t0).Round(time.Millisecond))
	}

	// The same token twice at once: one is checked, the other told to wait.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.AddOperation(ctx, api.OperationSpec{Name: "mid" + string(rune('a'+i)), Module: mid, ABI: api.ABICommand})
		})
	}
	wg.Wait()
	busy, ok := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ae) && ae.Code == api.CodeUnavailable && strings.Contains(ae.Message, "one at a time"):
			busy++
		default:
			t.Errorf("registering a module with a 4 MB function: %v", err)
		}
	}
	if ok != 1 || busy != 1 {
		t.Errorf("two registrations at once by one token: %d done, %d told to wait; want one each (%v)", ok, busy, errs)
	}
	close(stop)
	growth := <-peak - base
	t.Logf("the server grew by %.0f MiB at most (from %.0f MiB) checking a 63 MB function (refused) and a 4 MB one", float64(growth)/(1<<20), float64(base)/(1<<20))
	if growth > maxGrowth {
		t.Errorf("the server grew by %.0f MiB, more than %d MiB", float64(growth)/(1<<20), maxGrowth>>20)
	}
}
