package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/cache"
	"github.com/braidhq/braid/store/s3"
)

// storeFlags choose the server's object store: the data directory's by
// default, or an S3-compatible bucket (docs/storage.md), with a bounded
// local read cache.
type storeFlags struct {
	url        string
	endpoint   string
	cacheDir   string
	cacheBytes int64
	imports    string // --s3-import
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "store", "", "keep objects in s3://BUCKET[/PREFIX] (endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, ~/.aws); default: under --data")
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "the S3 endpoint URL, over AWS_ENDPOINT_URL (for --store and put --from)")
	fs.StringVar(&f.cacheDir, "store-cache", "", "with --store s3://…: cache objects read from the bucket in this directory (inputs used by many units)")
	fs.Int64Var(&f.cacheBytes, "store-cache-max", 10<<30, "the --store-cache directory's bound, in bytes (least recently read go first)")
	fs.StringVar(&f.imports, "s3-import", "", "buckets, comma-separated, whose objects clients may have this server read (braid put --from s3://BUCKET/KEY)\nwith its own credentials (default: the --store bucket; \"\" without --store: none)")
}

// apply sets cfg's OpenStore and Import from the flags.
func (f *storeFlags) apply(cfg *server.Config, log *slog.Logger) error {
	s3cfg := s3.Config{Endpoint: f.endpoint, Logger: log.With("component", "store")}
	switch {
	case f.url == "":
		if f.cacheDir != "" {
			return errors.New("--store-cache caches a remote store: give --store s3://BUCKET[/PREFIX] too")
		}
	case strings.HasPrefix(f.url, "s3://"):
		bucket, prefix, err := s3.ParseURL(f.url)
		if err != nil {
			return fmt.Errorf("--store: %w", err)
		}
		s3cfg.Bucket, s3cfg.Prefix = bucket, prefix
		cfg.OpenStore = func(serverID string, sc store.Config) (store.Store, error) {
			c := s3cfg
			c.Config, c.Owner = sc, serverID
			st, err := s3.Open(context.Background(), c)
			if err != nil {
				return nil, err
			}
			log.Info("objects are kept in the bucket", "store", st.URL(), "endpoint", st.Endpoint())
			if f.cacheDir == "" {
				return st, nil
			}
			return cache.New(st, f.cacheDir, f.cacheBytes, log.With("component", "store-cache"))
		}
	default:
		return fmt.Errorf("--store %q: want s3://BUCKET[/PREFIX] (or no --store for the data directory)", f.url)
	}
	allowed := map[string]bool{s3cfg.Bucket: s3cfg.Bucket != ""}
	for _, b := range strings.Split(f.imports, ",") {
		if b = strings.TrimSpace(b); b != "" {
			allowed[b] = true
		}
	}
	cfg.Import = func(ctx context.Context, url string) (io.ReadCloser, int64, error) {
		// The server's credentials may read more than its clients should:
		// only the buckets the operator named.
		if bucket, _, err := s3.ParseURL(url); err != nil {
			return nil, 0, err
		} else if !allowed[bucket] {
			return nil, 0, fmt.Errorf("%w: bucket %q is not one this server imports from (braid server --s3-import)", server.ErrImportRefused, bucket)
		}
		c, err := s3.NewClient(ctx, s3.Config{Bucket: "any", Endpoint: f.endpoint})
		if err != nil {
			return nil, 0, err
		}
		return c.Import(ctx, url)
	}
	return nil
}
