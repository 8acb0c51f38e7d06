package cache_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/cache"
	"github.com/braidhq/braid/store/local"
	"github.com/braidhq/braid/store/storetest"
)

var ctx = context.Background()

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Space {
		dir, cdir := t.TempDir(), t.TempDir()
		return func(t *testing.T, cfg store.Config) store.Store {
			l, err := local.Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := cache.New(l, cdir, 1<<30, nil)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	})
}

// counting counts the opens that reach the store behind the cache.
type counting struct {
	store.Store
	opens atomic.Int64
}

func (c *counting) Open(ctx context.Context, id string) (io.ReadCloser, store.Info, error) {
	c.opens.Add(1)
	return c.Store.Open(ctx, id)
}

// TestReadsOnceThenBounded: an object read whole is read from the cache
// after; one read halfway is not cached; the cache stays within its bound,
// the least recently read going first.
func TestReadsOnceThenBounded(t *testing.T) {
	l, err := local.Open(t.TempDir(), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	behind := &counting{Store: l}
	const max = 8 << 10 // objects up to 1 KiB are cached
	s, err := cache.New(behind, t.TempDir(), max, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := s.(*cache.Store)
	ids := make([]string, 12)
	for i := range ids {
		info, err := l.PutBytes(ctx, []byte(fmt.Sprintf("%01000d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = info.ID
	}
	for range 3 {
		if _, err := store.ReadAll(ctx, c, ids[0], 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	if n := behind.opens.Load(); n != 1 {
		t.Fatalf("three reads reached the store behind %d times, want once", n)
	}
	r, _, err := c.Open(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	r.Read(make([]byte, 10))
	r.Close()
	if _, err := store.ReadAll(ctx, c, ids[1], 1<<20); err != nil {
		t.Fatal(err)
	}
	if n := behind.opens.Load(); n != 3 {
		t.Fatalf("a half-read object was cached (opens %d, want 3)", n)
	}
	for _, id := range ids[2:] {
		if _, err := store.ReadAll(ctx, c, id, 1<<20); err != nil {
			t.Fatal(err)
		}
		if c.Used() > max {
			t.Fatalf("cache holds %d bytes, bound %d", c.Used(), max)
		}
	}
	before := behind.opens.Load()
	if _, err := store.ReadAll(ctx, c, ids[len(ids)-1], 1<<20); err != nil {
		t.Fatal(err)
	}
	if behind.opens.Load() != before {
		t.Error("the most recently read object was evicted")
	}
	if err := c.Remove(ctx, ids[len(ids)-1]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Open(ctx, ids[len(ids)-1]); err == nil {
		t.Error("a removed object is still read from the cache")
	}
}
