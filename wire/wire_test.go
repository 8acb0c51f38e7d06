package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

func sampleUnit() Unit {
	return Unit{
		ID: 42, Job: "j-7", Index: 3, Attempt: 2, Op: "blur",
		Digest: [32]byte{1, 2, 3},
		Params: map[string]string{"sigma": "2.5", "format": "png"},
		Input:  []byte("GIF89a..."),
	}
}

func TestUnitRoundTrip(t *testing.T) {
	u := sampleUnit()
	b, err := AppendUnit(nil, &u)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseUnit(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, u)
	}
}

func TestResultRoundTrip(t *testing.T) {
	res := Result{ID: 9, Status: StatusFailed, Error: "ops: input is not an image",
		Queued: 3 * time.Millisecond, Compute: time.Second, QueueDepth: 4, Rate: 123.456,
		Output: []byte{0, 1, 2}}
	got, err := ParseResult(AppendResult(nil, &res))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, res)
	}
}

func TestParseRejects(t *testing.T) {
	u := sampleUnit()
	good, _ := AppendUnit(nil, &u)
	cases := map[string][]byte{
		"empty":          nil,
		"bad magic":      append([]byte("XX"), good[2:]...),
		"version":        append([]byte{'B', 'U', 9}, good[3:]...),
		"truncated":      good[:20],
		"result as unit": AppendResult(nil, &Result{ID: 1}),
	}
	for name, p := range cases {
		if _, err := ParseUnit(p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	bad := AppendResult(nil, &Result{ID: 1})
	bad[11] = 7 // status
	if _, err := ParseResult(bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown status: err = %v", err)
	}
}

func TestAppendUnitLimits(t *testing.T) {
	u := sampleUnit()
	u.Op = string(bytes.Repeat([]byte("x"), 300))
	if _, err := AppendUnit(nil, &u); err == nil {
		t.Error("300-byte op name accepted")
	}
	u = sampleUnit()
	u.Index = -1
	if _, err := AppendUnit(nil, &u); err == nil {
		t.Error("negative index accepted")
	}
}

func FuzzParse(f *testing.F) {
	u := sampleUnit()
	b, _ := AppendUnit(nil, &u)
	f.Add(b)
	f.Add(AppendResult(nil, &Result{ID: 3, Error: "x", Output: []byte("out")}))
	f.Add(AppendWant(nil, Want{Streams: 3, InFlight: 5}))
	f.Add(AppendLease(nil, Lease{Seq: 4}))
	f.Fuzz(func(t *testing.T, p []byte) {
		if l, err := ParseLease(p); err == nil && string(AppendLease(nil, l)) != string(p) {
			t.Fatalf("%q parses as lease %+v but re-encodes differently", p, l)
		}
		if w, err := ParseWant(p); err == nil && string(AppendWant(nil, w)) != string(p) {
			t.Fatalf("%q parses as %+v but re-encodes differently", p, w)
		}
		if u, err := ParseUnit(p); err == nil {
			again, err := AppendUnit(nil, &u)
			if err != nil {
				t.Fatalf("re-encode parsed unit: %v", err)
			}
			if _, err := ParseUnit(again); err != nil {
				t.Fatalf("re-parse: %v", err)
			}
		}
		if r, err := ParseResult(p); err == nil {
			if _, err := ParseResult(AppendResult(nil, &r)); err != nil {
				t.Fatalf("re-parse result: %v", err)
			}
		}
	})
}

func BenchmarkUnitCodec(b *testing.B) {
	u := sampleUnit()
	u.Input = make([]byte, 19<<10)
	buf := make([]byte, 0, 20<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(u.Input)))
	for b.Loop() {
		buf, _ = AppendUnit(buf[:0], &u)
		if _, err := ParseUnit(buf); err != nil {
			b.Fatal(err)
		}
	}
}
