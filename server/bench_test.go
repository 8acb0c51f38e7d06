package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// BenchmarkSubmit measures accepted submissions per second: parallel
// clients submit one-unit jobs over loopback HTTP to a real server (no
// workers, so the jobs only queue). Each 201 names a job whose record is
// on disk, so this is mostly the cost of making submissions durable and
// how well concurrent ones share a commit: the more submitters, the more
// submissions each commit carries.
func BenchmarkSubmit(b *testing.B) {
	for _, perCore := range []int{8, 32} {
		b.Run(fmt.Sprintf("submitters=%d", perCore*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			benchmarkSubmit(b, perCore)
		})
	}
}

func benchmarkSubmit(b *testing.B, perCore int) {
	ctx := context.Background()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	c := client.New(cl.Server.URL()).WithHTTPClient(hc)
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		b.Fatal(err)
	}
	spec := api.JobSpec{Op: "grayscale", Input: obj.ID}
	b.SetParallelism(perCore)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Submit(ctx, spec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submits/s")
	b.StopTimer() // not the cluster's shutdown
}

// BenchmarkGetObject measures downloads of a 256 MiB object over loopback
// HTTP: the server hands the file to the kernel (sendfile), so this is
// about the loopback's and the reader's speed, not a copy in the server.
func BenchmarkGetObject(b *testing.B) {
	const size = 256 << 20
	ctx := context.Background()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	c := client.New(cl.Server.URL())
	obj, err := c.Put(ctx, io.LimitReader(zeros{}, size))
	if err != nil {
		b.Fatal(err)
	}
	url := cl.Server.URL() + "/v1/objects/" + obj.ID
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("read %d bytes, %v; want %d", n, err, size)
		}
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
