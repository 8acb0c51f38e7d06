package wire

import (
	"errors"
	"testing"
)

func TestLeaseMessages(t *testing.T) {
	for _, n := range []int{0, 1, 7, 65535} {
		w := Want{Streams: n, InFlight: 3 * n, LeaseSeq: uint32(n + 1)}
		if got, err := ParseWant(AppendWant(nil, w)); err != nil || got != w {
			t.Errorf("want %+v: got %+v, %v", w, got, err)
		}
		l := Lease{Streams: n, Seq: uint32(2 * n)}
		if got, err := ParseLease(AppendLease(nil, l)); err != nil || got != l {
			t.Errorf("lease %+v: got %+v, %v", l, got, err)
		}
	}
	if got, _ := ParseLease(AppendLease(nil, Lease{Streams: 1 << 20})); got.Streams != 65535 {
		t.Errorf("oversize lease clamps to %d, want 65535", got.Streams)
	}
	bad := [][]byte{nil, []byte("BL"), []byte("BL\x01\x00\x01"), append(AppendLease(nil, Lease{Streams: 2}), 0), AppendWant(nil, Want{Streams: 2})}
	for _, p := range bad {
		if _, err := ParseLease(p); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseLease(%q) = %v, want ErrMalformed", p, err)
		}
	}
}

func TestKindOf(t *testing.T) {
	u := sampleUnit()
	unit, _ := AppendUnit(nil, &u)
	cases := map[Kind][]byte{KindUnit: unit, KindResult: AppendResult(nil, &Result{}),
		KindWant: AppendWant(nil, Want{Streams: 1}), KindLease: AppendLease(nil, Lease{Streams: 1}), KindUnknown: []byte("BX")}
	for want, p := range cases {
		if got := KindOf(p); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", p[:2], got, want)
		}
	}
	if KindOf(nil) != KindUnknown || KindOf([]byte("XU")) != KindUnknown {
		t.Error("short or foreign message has a kind")
	}
}

func TestReturnedStatus(t *testing.T) {
	r, err := ParseResult(AppendResult(nil, &Result{ID: 9, Status: StatusReturned}))
	if err != nil || r.Status != StatusReturned || r.Status.String() != "returned" {
		t.Fatalf("returned result: %+v, %v", r, err)
	}
}
