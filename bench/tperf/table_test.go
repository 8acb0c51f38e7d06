package tperf_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/quic"
	"github.com/braidhq/braid/transport/sctp"
	"github.com/braidhq/braid/transport/tcp"
)

// TestTable prints the loopback table of issue 3 (bulk 64 KiB and 19 KiB
// request/response, 1 and 4 streams, every transport here). It only runs
// with TPERF_TABLE=1; TPERF_SECONDS sets each run's duration (default 3).
//
//	TPERF_TABLE=1 go test ./bench/tperf -run TestTable -v
func TestTable(t *testing.T) {
	if os.Getenv("TPERF_TABLE") == "" {
		t.Skip("set TPERF_TABLE=1 to print the transport table")
	}
	d, err := time.ParseDuration(os.Getenv("TPERF_SECONDS") + "s")
	if err != nil || d <= 0 {
		d = 3 * time.Second
	}
	trs := []transport.Transport{sctp.New(sctp.Config{}), quic.New(quic.Config{}), tcp.New(tcp.Config{})}
	var rs []tperf.Result
	for _, tr := range trs {
		for _, mode := range []struct {
			name string
			size int
		}{{"bulk", 64 << 10}, {"rr", 19 << 10}} {
			for _, n := range []int{1, 4} {
				r, err := tperf.Run(context.Background(), tperf.Config{Transport: tr, Streams: n, Size: mode.size, Mode: mode.name, Duration: d})
				if err != nil {
					t.Fatalf("%s %s %d: %v", tr.Name(), mode.name, n, err)
				}
				rs = append(rs, r)
			}
		}
	}
	_ = tperf.WriteTable(os.Stdout, rs)
	if f := os.Getenv("TPERF_JSON"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		_ = tperf.WriteJSON(w, rs)
	}
}
