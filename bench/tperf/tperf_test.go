package tperf_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/transport/sctp"
	"github.com/braidhq/braid/transport/tcp"
)

func TestRunInProcess(t *testing.T) {
	for _, mode := range []string{"bulk", "rr"} {
		for _, tr := range []string{"tcp", "sctp"} {
			t.Run(tr+"/"+mode, func(t *testing.T) {
				cfg := tperf.Config{Streams: 2, Size: 19 << 10, Mode: mode, Duration: 300 * time.Millisecond}
				cfg.Transport = sctp.New(sctp.Config{})
				if tr == "tcp" {
					cfg.Transport = tcp.New(tcp.Config{})
				}
				res, err := tperf.Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res.Bytes == 0 || res.Messages == 0 || res.Gbps <= 0 || res.CPUSeconds <= 0 {
					t.Errorf("empty result: %+v", res)
				}
				var buf bytes.Buffer
				if err := res.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), tr) {
					t.Errorf("table: %v\n%s", err, buf.String())
				}
				t.Log("\n" + buf.String())
			})
		}
	}
}

func TestListenConnectFile(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, bytes.Repeat([]byte("braid"), 10000), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := tcp.New(tcp.Config{})
	ctx := context.Background()
	addr := freeAddr(t)
	srv := make(chan tperf.Result, 1)
	go func() {
		r, err := tperf.Run(ctx, tperf.Config{Transport: tr, Listen: addr, File: out})
		if err != nil {
			t.Error(err)
		}
		srv <- r
	}()
	var cli tperf.Result
	var err error
	for range 50 { // the listener may not be up yet
		cli, err = tperf.Run(ctx, tperf.Config{Transport: tr, Connect: addr, File: in, Size: 3000, Duration: 200 * time.Millisecond})
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := <-srv
	got, _ := os.ReadFile(out)
	if s.Bytes != cli.Bytes || int64(len(got)) != s.Bytes || !bytes.HasPrefix(got, []byte("braidbraid")) {
		t.Errorf("client %d bytes, server %d, file %d", cli.Bytes, s.Bytes, len(got))
	}
	var js bytes.Buffer
	if err := tperf.WriteJSON(&js, []tperf.Result{cli, s}); err != nil || !strings.Contains(js.String(), `"gbps"`) {
		t.Errorf("json: %v %s", err, js.String())
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestHOL checks that mode hol times the small round trips beside a bulk
// stream and reports both.
func TestHOL(t *testing.T) {
	cfg := tperf.Config{Transport: tcp.New(tcp.Config{}), Mode: "hol", Size: 1 << 20, Duration: 300 * time.Millisecond}
	res, err := tperf.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Streams != 2 || res.Bytes < 1<<20 {
		t.Errorf("want 2 streams and at least one bulk message: %+v", res)
	}
	if res.LatencyP50 <= 0 || res.LatencyP99 < res.LatencyP50 || res.LatencyMax < res.LatencyP99 {
		t.Errorf("latencies not ordered or missing: %+v", res)
	}
	var buf bytes.Buffer
	if err := res.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "hol") {
		t.Errorf("table: %v\n%s", err, buf.String())
	}
	t.Log("\n" + buf.String())
}

// TestSamples: a listen side with Samples records the bytes it has
// received as it goes: from 0 to the total it reports, never falling, in
// time order.
func TestSamples(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "samples.csv")
	tr := tcp.New(tcp.Config{})
	ctx := context.Background()
	addr := freeAddr(t)
	srv := make(chan tperf.Result, 1)
	go func() {
		r, err := tperf.Run(ctx, tperf.Config{Transport: tr, Listen: addr, Samples: path})
		if err != nil {
			t.Error(err)
		}
		srv <- r
	}()
	var err error
	for range 50 { // the listener may not be up yet
		_, err = tperf.Run(ctx, tperf.Config{Transport: tr, Connect: addr, Duration: 3 * tperf.SampleEvery})
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := <-srv
	got, err := tperf.ReadSamples(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[0].Bytes != 0 || got[len(got)-1].Bytes != s.Bytes {
		t.Fatalf("%d samples from %v to %v, want at least 3 from 0 to the %d bytes received", len(got), got[0], got[len(got)-1], s.Bytes)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Bytes < got[i-1].Bytes || got[i].At.Before(got[i-1].At) {
			t.Errorf("sample %d %v after %v", i, got[i], got[i-1])
		}
	}
	for _, bad := range []string{"", "unix_ns,bytes\n12,x\n", "when,what\n1,2\n", "unix_ns,bytes\n1,-2\n"} {
		p := filepath.Join(dir, "bad.csv")
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := tperf.ReadSamples(p); err == nil {
			t.Errorf("ReadSamples(%q) took it", bad)
		}
	}
}
