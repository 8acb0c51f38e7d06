// Package testlog is a log sink for tests: processes and goroutines write
// it while the test reads it.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer collects text written from several goroutines.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a text logger at level that writes to l.
func (l *Buffer) Logger(level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}
