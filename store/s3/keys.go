package s3

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// entry is one listed or examined key.
type entry struct {
	name string // the key without the listed prefix
	size int64
	at   time.Time // LastModified
}

// listPrefix lists every key under prefix.
func (s *Store) listPrefix(ctx context.Context, prefix string) ([]entry, error) {
	var out []entry
	p := awss3.NewListObjectsV2Paginator(s.api, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		cctx, cancel := s.call(ctx)
		page, err := p.NextPage(cctx)
		cancel()
		if err != nil {
			return nil, s.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, entry{name: strings.TrimPrefix(aws.ToString(o.Key), prefix),
				size: aws.ToInt64(o.Size), at: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

// head returns a key's size and time; store.ErrNotFound if it is missing.
func (s *Store) head(ctx context.Context, key string) (entry, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.api.HeadObject(cctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return entry{}, s.wrap("head", key, err)
	}
	return entry{name: key, size: aws.ToInt64(out.ContentLength), at: aws.ToTime(out.LastModified)}, nil
}

// putSmall writes p under key in one request. With ifNew, a key that
// exists already is left alone and putSmall reports existed.
func (s *Store) putSmall(ctx context.Context, key string, p []byte, ifNew bool) (existed bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, s.transferTimeout(int64(len(p))))
	defer cancel()
	in := &awss3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p)))}
	if ifNew {
		in.IfNoneMatch = aws.String("*")
	}
	_, err = s.api.PutObject(cctx, in)
	if ifNew && isPrecondition(err) {
		return true, nil
	}
	return false, s.wrap("put", key, err)
}

// copyKey copies src to dst within the bucket; store.ErrNotFound if src
// is missing.
func (s *Store) copyKey(ctx context.Context, src, dst string, size int64) error {
	cctx, cancel := context.WithTimeout(ctx, s.transferTimeout(size))
	defer cancel()
	source := url.PathEscape(s.bucket) + "/" + escapeKey(src)
	_, err := s.api.CopyObject(cctx, &awss3.CopyObjectInput{Bucket: &s.bucket, Key: &dst, CopySource: &source})
	return s.wrap("copy to "+dst+" from", src, err)
}

// escapeKey escapes a key for x-amz-copy-source, keeping its slashes.
func escapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// deleteKey deletes key; a missing key is not an error.
func (s *Store) deleteKey(ctx context.Context, key string) error {
	cctx, cancel := s.call(ctx)
	defer cancel()
	_, err := s.api.DeleteObject(cctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
	if isNotFound(err) {
		return nil
	}
	return s.wrap("delete", key, err)
}

// transferTimeout bounds a request that carries size bytes: the answer
// timeout plus the bytes at a slow 1 MiB/s.
func (s *Store) transferTimeout(size int64) time.Duration {
	return s.timeout + time.Duration(size>>20)*time.Second
}

// leaseOf is the latest time an object's lease may be at, given the S3
// times of its key and lease marker: S3 keeps whole seconds, so the lease
// may be up to a second after what it says.
func leaseOf(times ...time.Time) time.Time {
	var at time.Time
	for _, t := range times {
		if t.After(at) {
			at = t
		}
	}
	return at.Truncate(time.Second).Add(time.Second).UTC()
}
