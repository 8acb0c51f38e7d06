package s3

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/braidhq/braid/store"
)

// Info is store.Info.
type Info = store.Info

var _ store.Shared = (*Store)(nil)

// Store is a store.Shared in an S3 bucket.
type Store struct {
	*Client
	cfg    Config
	bucket string
	// stripes[b] orders this process's refreshes and removals of the
	// objects whose id starts with byte b (the collector's rule within one
	// server; across servers the trash does, see doc.go). Only one is held
	// at a time.
	stripes [256]stripe
	// objects and bytes count what is stored (Usage).
	objects, bytes atomic.Int64
}

type stripe struct {
	sync.Mutex
	// touched holds when this store last refreshed an object (Unix ns),
	// for TouchEvery; emptied when it reaches maxTouched entries.
	touched map[string]int64
}

const maxTouched = 128

// Open connects to the bucket and checks that this store can use it: a
// missing bucket, wrong credentials or an unreachable endpoint are refused
// here with what to do about them. It then aborts this owner's uploads
// left in progress by a crash and counts the objects.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	c, err := NewClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	_ = cfg.validate() // NewClient has; this fills the defaults in cfg too
	s := &Store{Client: c, cfg: cfg, bucket: cfg.Bucket}
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	if err := s.abortOwnUploads(ctx); err != nil {
		return nil, err
	}
	objs, err := s.listPrefix(ctx, s.key("objects/"))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		s.counted(1, o.size)
	}
	return s, nil
}

// key is the bucket key of name under the store's prefix.
func (s *Store) key(name string) string {
	if s.cfg.Prefix == "" {
		return name
	}
	return s.cfg.Prefix + "/" + name
}

func (s *Store) objectKey(id string) string { return s.key("objects/" + id) }
func (s *Store) leaseKey(id string) string  { return s.key("leases/" + id) }
func (s *Store) trashKey(id string) string  { return s.key("trash/" + id) }
func (s *Store) tmpPrefix() string          { return s.key("tmp/" + s.cfg.Owner + "/") }
func (s *Store) refsKey(owner string) string {
	return s.key("servers/" + owner)
}

// URL is where the store keeps its objects, s3://BUCKET[/PREFIX].
func (s *Store) URL() string {
	if s.cfg.Prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + s.cfg.Prefix
}

// probe lists one key under the prefix: the cheapest request that needs
// the bucket, working credentials and read permission.
func (s *Store) probe(ctx context.Context) error {
	cctx, cancel := s.call(ctx)
	defer cancel()
	_, err := s.api.ListObjectsV2(cctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.key("")), MaxKeys: aws.Int32(1)})
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch {
	case badCredentials[code]:
		return fmt.Errorf("store/s3: %s refused the credentials from %s (%s): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, ~/.aws/credentials) to a key this endpoint knows",
			s.endpoint, s.creds, code)
	case code == "NoSuchBucket" || status == http.StatusNotFound && (code == "" || code == "NotFound"):
		return fmt.Errorf("store/s3: bucket %q does not exist at %s: create it first (for example: aws s3 mb s3://%s --endpoint-url %s)",
			s.bucket, s.endpoint, s.bucket, s.endpoint)
	case code == "AccessDenied" || status == http.StatusForbidden:
		return fmt.Errorf("store/s3: %s denied listing s3://%s with the credentials from %s: grant them s3:ListBucket, GetObject, PutObject and DeleteObject on the bucket",
			s.endpoint, s.bucket, s.creds)
	case unavailable(err):
		return fmt.Errorf("%w: %s does not answer (%v): start it, or check --s3-endpoint / AWS_ENDPOINT_URL", store.ErrUnavailable, s.endpoint, cause(err))
	}
	return fmt.Errorf("store/s3: checking bucket %q at %s: %w", s.bucket, s.endpoint, err)
}

// badCredentials are the error codes of a key the endpoint does not know
// or a signature it does not accept (versitygw says XAdminUserNotFound).
var badCredentials = map[string]bool{"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"InvalidToken": true, "ExpiredToken": true, "XAdminUserNotFound": true}

// abortOwnUploads aborts the multipart uploads and deletes the temporary
// objects a crash of this owner left; other owners' are theirs.
func (s *Store) abortOwnUploads(ctx context.Context) error {
	prefix := s.tmpPrefix()
	p := awss3.NewListMultipartUploadsPaginator(s.api, &awss3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		cctx, cancel := s.call(ctx)
		page, err := p.NextPage(cctx)
		cancel()
		if err != nil {
			return s.wrap("list uploads", prefix, err)
		}
		for _, u := range page.Uploads {
			cctx, cancel := s.call(ctx)
			_, err := s.api.AbortMultipartUpload(cctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId})
			cancel()
			if err != nil && !isNotFound(err) {
				return s.wrap("abort upload", *u.Key, err)
			}
		}
	}
	tmps, err := s.listPrefix(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range tmps {
		if err := s.deleteKey(ctx, prefix+o.name); err != nil {
			return err
		}
	}
	return nil
}

// Usage reports the objects counted at Open, plus this store's own writes
// and removals since (other servers' are counted at the next Open).
func (s *Store) Usage() (objects, bytes int64) { return s.objects.Load(), s.bytes.Load() }

func (s *Store) counted(n, size int64) {
	s.objects.Add(n)
	s.bytes.Add(size)
}

// MaxSize is the largest object Put accepts.
func (s *Store) MaxSize() int64 { return s.cfg.MaxSize }

// Close does nothing: requests in flight finish or fail with their
// contexts.
func (s *Store) Close() error { return nil }

// lock takes the lock of id's stripe; the caller unlocks it.
func (s *Store) lock(id string) *stripe {
	b, _ := hex.DecodeString(id[:2])
	st := &s.stripes[b[0]]
	st.Lock()
	return st
}

// remember records that this store refreshed id at at.
func (st *stripe) remember(id string, at time.Time) {
	if st.touched == nil || len(st.touched) >= maxTouched {
		st.touched = make(map[string]int64, 16)
	}
	st.touched[id] = at.UnixNano()
}

// recent reports whether this store refreshed id less than every ago.
func (st *stripe) recent(id string, every time.Duration, now time.Time) (time.Time, bool) {
	at, ok := st.touched[id]
	if !ok || now.UnixNano()-at >= int64(every) {
		return time.Time{}, false
	}
	return time.Unix(0, at).UTC(), true
}
