package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/pki"
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

// BenchmarkControlPlane compares the control plane in plain HTTP with
// HTTPS, the server's default off loopback (a certificate from
// internal/pki, as `braid server` makes it), on loopback: uploads and
// downloads of 16 MiB objects, and job status requests from 16 clients at
// once. Each client keeps its connection, so this is the cost of TLS's
// record layer more than of its handshakes.
func BenchmarkControlPlane(b *testing.B) {
	const size = 16 << 20
	for _, scheme := range []string{"http", "https"} {
		ctx := context.Background()
		cfg := cluster.Config{DataDir: b.TempDir()}
		if scheme == "https" {
			cfg.TLS = serverTLS(b)
		}
		cl, err := cluster.Start(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		c := cl.Client
		obj, err := c.Put(ctx, io.LimitReader(zeros{}, size))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(scheme+"/put-16MiB", func(b *testing.B) {
			b.SetBytes(size)
			cpu0 := tperf.CPUSeconds()
			for b.Loop() {
				if _, err := c.Put(ctx, io.LimitReader(zeros{}, size)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((tperf.CPUSeconds()-cpu0)/(float64(b.N)*size/1e9), "CPU-s/GB")
		})
		b.Run(scheme+"/get-16MiB", func(b *testing.B) {
			b.SetBytes(size)
			cpu0 := tperf.CPUSeconds()
			for b.Loop() {
				var n counter
				if err := c.Get(ctx, obj.ID, &n); err != nil || n != size {
					b.Fatalf("read %d bytes, %v; want %d", n, err, size)
				}
			}
			b.ReportMetric((tperf.CPUSeconds()-cpu0)/(float64(b.N)*size/1e9), "CPU-s/GB")
		})
		img, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
		if err != nil {
			b.Fatal(err)
		}
		job, err := c.Submit(ctx, api.JobSpec{Op: "grayscale", Input: img.ID})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(scheme+"/job-status", func(b *testing.B) {
			b.SetParallelism(16 / runtime.GOMAXPROCS(0))
			start, cpu0 := time.Now(), tperf.CPUSeconds()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Job(ctx, job.ID, false); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.ReportMetric((tperf.CPUSeconds()-cpu0)/float64(b.N)*1e6, "CPU-µs/req")
		})
		cl.Close()
	}
}

// serverTLS is the server configuration `braid server` makes for HTTPS.
func serverTLS(b testing.TB) *tls.Config {
	now := time.Now()
	ca, err := pki.LoadOrMakeCA(b.TempDir(), now)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := ca.ServerCert([]string{"127.0.0.1"}, now)
	if err != nil {
		b.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// counter counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
