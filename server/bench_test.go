package server_test

import (
	"bytes"
	"context"
	"net/http"
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
// how well concurrent ones share a commit.
func BenchmarkSubmit(b *testing.B) {
	ctx := context.Background()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	c := client.New(cl.Server.URL()).WithHTTPClient(hc)
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		b.Fatal(err)
	}
	spec := api.JobSpec{Op: "grayscale", Input: obj.ID}
	b.SetParallelism(8) // 8 submitters per core
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
}
