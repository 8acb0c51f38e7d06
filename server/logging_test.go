package server_test

import (
	"bytes"
	"log/slog"
	"sync"
)

// syncBuffer collects a server's log for a test.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(s, nil)) }
