package userop

import (
	"context"
	"errors"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop/wasmtest"
)

// A module's compile cost follows its largest function; a function over
// MaxFunction is refused before anything is compiled.
func TestCompileCost(t *testing.T) {
	small, err := CompileCost(wasmtest.BigFunction(1 << 10))
	if err != nil {
		t.Fatal(err)
	}
	big, err := CompileCost(wasmtest.BigFunction(1 << 20))
	if err != nil {
		t.Fatal(err)
	}
	if big-small < 40<<20 || big > CompileCostBound(1<<20+64) {
		t.Errorf("cost of a 1 KiB function %d, of a 1 MiB one %d (bound %d): want about 64 bytes a byte more, within the bound",
			small, big, CompileCostBound(1<<20+64))
	}
	huge := wasmtest.BigFunction(MaxFunction + 1)
	if _, err := CompileCost(huge); !errors.Is(err, ErrFunctionTooLarge) {
		t.Errorf("CompileCost of a function over MaxFunction: %v, want ErrFunctionTooLarge", err)
	}
	if err := Check(context.Background(), huge, api.ABICommand, 0); !errors.Is(err, ErrFunctionTooLarge) || !errors.Is(err, ErrBadSpec) {
		t.Errorf("Check of a function over MaxFunction: %v, want ErrFunctionTooLarge and ErrBadSpec", err)
	}
}
