package tperf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SampleEvery is how often a listen side with Config.Samples records the
// bytes it has received.
const SampleEvery = 100 * time.Millisecond

// Sample is what a receiver had received by a moment: payload bytes since
// its association came up.
type Sample struct {
	At    time.Time
	Bytes int64
}

// samplesHeader is the first line of a samples file.
const samplesHeader = "unix_ns,bytes"

// startSamples records live into the file at path every SampleEvery, from
// now until the returned stop, which writes a last sample and closes the
// file. With no path it records nothing.
func startSamples(path string, live *atomic.Int64) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("tperf: samples: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, samplesHeader)
	record := func() { fmt.Fprintf(w, "%d,%d\n", time.Now().UnixNano(), live.Load()) }
	record()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				record()
			case <-done:
				return
			}
		}
	})
	return func() error {
		close(done)
		wg.Wait()
		record()
		return errors.Join(w.Flush(), f.Close())
	}, nil
}

// ReadSamples reads a samples file that a listen side wrote
// (Config.Samples): the bytes received by each moment, in time order.
func ReadSamples(path string) ([]Sample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tperf: samples: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || lines[0] != samplesHeader {
		return nil, fmt.Errorf("tperf: samples %s: no %q header", path, samplesHeader)
	}
	var out []Sample
	for i, l := range lines[1:] {
		ns, by, ok := strings.Cut(l, ",")
		t, err1 := strconv.ParseInt(ns, 10, 64)
		n, err2 := strconv.ParseInt(by, 10, 64)
		if !ok || err1 != nil || err2 != nil || n < 0 {
			return nil, fmt.Errorf("tperf: samples %s line %d: %q is not unix_ns,bytes", path, i+2, l)
		}
		out = append(out, Sample{At: time.Unix(0, t), Bytes: n})
	}
	return out, nil
}
