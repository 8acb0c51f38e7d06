package tperf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
)

func listenConfig(cfg Config) transport.ListenConfig {
	return transport.ListenConfig{Secret: cfg.Secret, Name: "tperf", RecStreams: cfg.Streams, MaxStreams: transport.MaxStreams}
}

// serveOne listens, serves one association and reports what it received.
func serveOne(ctx context.Context, cfg Config) (Result, error) {
	ln, err := cfg.Transport.Listen(cfg.Listen, listenConfig(cfg))
	if err != nil {
		return Result{}, err
	}
	defer ln.Close()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	return measure(ctx, cfg, func() (Result, error) { return serve(ctx, cfg, ln) })
}

// serve accepts one association and answers every stream until each has
// sent its end marker.
func serve(ctx context.Context, cfg Config, ln transport.Listener) (Result, error) {
	a, err := ln.Accept(ctx)
	if err != nil {
		return Result{}, err
	}
	defer a.Close()
	sink, err := openSink(cfg)
	if err != nil {
		return Result{}, err
	}
	defer sink.Close()
	var (
		wg          sync.WaitGroup
		bytes, msgs atomic.Int64
		live        atomic.Int64 // payload bytes received so far, all streams
		errs        = make(chan error, a.Streams())
	)
	start := time.Now()
	stopSamples, err := startSamples(cfg.Samples, &live)
	if err != nil {
		return Result{}, err
	}
	for s := range a.Streams() {
		wg.Go(func() {
			b, m, err := serveStream(ctx, a, s, sink, &live)
			bytes.Add(b)
			msgs.Add(m)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	errAll := stopSamples()
	for err := range errs {
		errAll = errors.Join(errAll, err)
	}
	return Result{Seconds: time.Since(start).Seconds(), Bytes: bytes.Load(), Messages: msgs.Load()}, errAll
}

// serveStream reads the mode, then drains (bulk) or echoes (rr) until the
// empty end marker, which it answers with the byte count. live counts the
// bytes as they come.
func serveStream(ctx context.Context, a transport.Association, s int, sink io.Writer, live *atomic.Int64) (int64, int64, error) {
	mode, err := a.Recv(ctx, s)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %d: mode: %w", s, err)
	}
	echo := string(mode) == "rr"
	var n, m int64
	for {
		p, err := a.Recv(ctx, s)
		if err != nil {
			return n, m, fmt.Errorf("stream %d: %w", s, err)
		}
		if len(p) == 0 {
			return n, m, a.Send(ctx, s, binary.BigEndian.AppendUint64(nil, uint64(n)))
		}
		n, m = n+int64(len(p)), m+1
		live.Add(int64(len(p)))
		if echo {
			err = a.Send(ctx, s, p)
		} else {
			_, err = sink.Write(p)
		}
		if err != nil {
			return n, m, fmt.Errorf("stream %d: %w", s, err)
		}
	}
}

// openSink is where a listen-only side writes what it receives.
func openSink(cfg Config) (io.WriteCloser, error) {
	if cfg.File == "" || cfg.Connect != "" || cfg.Listen == "" {
		return nopCloser{io.Discard}, nil
	}
	f, err := os.Create(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("tperf: output file: %w", err)
	}
	return &lockedWriter{w: f}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// lockedWriter serialises the streams' writes to one file.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  *os.File
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }
