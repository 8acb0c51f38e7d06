package server

import (
	"testing"

	"github.com/braidhq/braid/api"
)

// FuzzParseInputList: an input list of any bytes gives ids or a 4xx,
// never a panic.
func FuzzParseInputList(f *testing.F) {
	id := "9170b0724b88befd45e95c03f9da856ca360c2188a1877de2b14867f630836c9"
	f.Add([]byte("# list\n" + id + "\n\n" + id + "\r\n"))
	f.Add([]byte("x\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseInputList(b)
		if err == nil && len(ids) == 0 {
			t.Fatal("no ids and no error")
		}
		if ae, ok := err.(*apiError); err != nil && (!ok || ae.status >= 500) {
			t.Fatalf("error %v is not a 4xx", err)
		}
	})
}

// FuzzPipelineSteps: any op and parameters give steps or a 4xx.
func FuzzPipelineSteps(f *testing.F) {
	f.Add("blur,sobel", "blur.sigma", "2")
	f.Add("a,,b", "1.x", "y")
	f.Add("noop,wc", "format", "png")
	f.Add(",", "9999999999999999999.k", "v")
	f.Fuzz(func(t *testing.T, op, k, v string) {
		steps, err := pipelineSteps(api.JobSpec{Op: op, Params: map[string]string{k: v}})
		if err != nil {
			if ae, ok := err.(*apiError); !ok || ae.status >= 500 {
				t.Fatalf("error %v is not a 4xx", err)
			}
			return
		}
		if len(steps) < 1 || len(steps) > MaxSteps {
			t.Fatalf("%d steps", len(steps))
		}
	})
}
