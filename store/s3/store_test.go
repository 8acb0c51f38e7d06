package s3_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/s3"
	"github.com/braidhq/braid/store/s3/s3test"
	"github.com/braidhq/braid/store/storetest"
)

var ctx = context.Background()

// TestConformance runs the store suite against versitygw, each test in a
// prefix of its own in one bucket.
func TestConformance(t *testing.T) {
	gw := s3test.Start(t, "braidbkt")
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Space {
		prefix := fmt.Sprintf("conf%d/objs", n.Add(1))
		return func(t *testing.T, cfg store.Config) store.Store {
			s, err := s3.Open(ctx, s3.Config{Config: cfg, Bucket: "braidbkt", Prefix: prefix, Endpoint: gw.Endpoint, PartSize: 5 << 20})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
