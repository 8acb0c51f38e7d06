package s3

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/braidhq/braid/store"
)

// Config configures a Store. Zero values mean the documented defaults;
// the endpoint, region and credentials not given here come from the
// standard AWS environment and files (AWS_ENDPOINT_URL[_S3], AWS_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/config and
// ~/.aws/credentials).
type Config struct {
	store.Config
	// Bucket holds the objects. Required.
	Bucket string
	// Prefix is prepended to every key this store writes ("" or a path
	// without leading or trailing slashes, like "braid/objs").
	Prefix string
	// Endpoint overrides the environment's endpoint (an http:// or
	// https:// URL). Empty: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the
	// profile's endpoint_url, else AWS itself.
	Endpoint string
	// PathStyle addresses buckets as ENDPOINT/BUCKET rather than
	// BUCKET.ENDPOINT. Default (nil): on for any endpoint but AWS's own.
	PathStyle *bool
	// Owner names this store's user among those sharing the bucket (the
	// server's persistent ID): its uploads in progress and its published
	// references live under keys of its own. Default "solo".
	Owner string
	// PartSize is the size of one part of a multipart upload, and the
	// largest object sent in a single request (default 8 MiB; at least
	// 5 MiB, S3's smallest part).
	PartSize int64
	// Uploads is how many parts of one upload are in flight (default 4).
	Uploads int
	// Timeout bounds each request's wait for an answer, and a transfer's
	// wait for its next bytes (default 30s): an endpoint that is down or
	// stalled fails the call with store.ErrUnavailable, never hangs it.
	Timeout time.Duration
	// StaleAfter: another owner's published references older than this
	// (and not retired) hold collection back (default TouchEvery, or a
	// minute without one). See store.Shared.
	StaleAfter time.Duration
	// Logger receives warnings (default: discard).
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultPartSize = 8 << 20
	DefaultUploads  = 4
	DefaultTimeout  = 30 * time.Second
	minPartSize     = 5 << 20
	// maxCopySize is the largest object one CopyObject request copies.
	maxCopySize = 5 << 30
)

func (c *Config) validate() error {
	c.Config = c.Config.WithDefaults()
	if c.Bucket == "" {
		return errors.New("store/s3: no bucket given")
	}
	c.Prefix = strings.Trim(c.Prefix, "/")
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.PartSize < minPartSize {
		return fmt.Errorf("store/s3: part size %d is under S3's smallest part (%d bytes)", c.PartSize, minPartSize)
	}
	if c.MaxSize > maxCopySize {
		return fmt.Errorf("store/s3: objects up to %d bytes asked for; this store publishes an upload with one copy, which S3 limits to %d bytes", c.MaxSize, int64(maxCopySize))
	}
	if c.Uploads <= 0 {
		c.Uploads = DefaultUploads
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = c.TouchEvery
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = time.Minute
	}
	if c.Owner == "" {
		c.Owner = "solo"
	}
	if strings.ContainsAny(c.Owner, "/ ") {
		return fmt.Errorf("store/s3: owner %q may not hold a slash or a space", c.Owner)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("store/s3: endpoint %q: want an http:// or https:// URL", c.Endpoint)
		}
	}
	return nil
}

// ParseURL splits s3://BUCKET[/PREFIX] into the bucket and the prefix.
func ParseURL(raw string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(raw, "s3://")
	if !ok {
		return "", "", fmt.Errorf("store/s3: %q: want s3://BUCKET[/PREFIX]", raw)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("store/s3: %q names no bucket: want s3://BUCKET[/PREFIX]", raw)
	}
	return bucket, strings.Trim(prefix, "/"), nil
}
