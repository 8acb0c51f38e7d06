package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/metrics"
	rpprof "runtime/pprof"
	"sync"
	"time"
)

// heapLive publishes in /debug/vars the heap the last collection found
// live (runtime/metrics /gc/heap/live:bytes): braid bench scale reads it
// as a job runs, where forcing a collection to learn it would stall the
// server it measures.
var heapLive = sync.OnceFunc(func() {
	expvar.Publish("heap_live_bytes", expvar.Func(func() any {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}))
})

// pprofFlag serves Go's runtime profiles (net/http/pprof) for a long-running
// role, on an address of its own so the profiles never share the API's port.
type pprofFlag struct{ addr string }

func (p *pprofFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&p.addr, "pprof", "", "serve Go runtime profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (default: off)")
}

// start listens on the address, if one was given, and serves until ctx ends.
func (p *pprofFlag) start(ctx context.Context, log *slog.Logger) error {
	if p.addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	heapLive()
	mux.Handle("/debug/vars", expvar.Handler()) // runtime.MemStats and heap_live_bytes as JSON: braid bench scale reads the heap here
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server stopped", "err", err)
		}
	}()
	log.Info("serving profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}

// startCPUProfile writes this process's CPU profile to path until the
// returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := rpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { rpprof.StopCPUProfile(); _ = f.Close() }, nil
}
