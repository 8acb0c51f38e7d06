package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/braidhq/braid/store"
)

// Open streams an object from the bucket: nothing is copied to local
// disk. An object a collector has just moved to the trash is restored.
// The reader fails with store.ErrUnavailable if the endpoint stops sending
// for Timeout.
func (s *Store) Open(ctx context.Context, id string) (io.ReadCloser, Info, error) {
	if !store.ValidID(id) {
		return nil, Info{}, store.ErrInvalidID
	}
	r, info, err := s.get(ctx, id)
	if !errors.Is(err, store.ErrNotFound) {
		return r, info, err
	}
	st := s.lock(id)
	_, err = s.headOrRestore(ctx, id)
	st.Unlock()
	if err != nil {
		return nil, Info{}, err
	}
	return s.get(ctx, id)
}

func (s *Store) get(ctx context.Context, id string) (io.ReadCloser, Info, error) {
	r, e, err := s.getKey(ctx, s.bucket, s.objectKey(id))
	if err != nil {
		return nil, Info{}, err
	}
	return r, Info{ID: id, Size: e.size, Created: leaseOf(e.at)}, nil
}

// getKey streams bucket/key, failing the read if the endpoint stalls.
func (c *Client) getKey(ctx context.Context, bucket, key string) (io.ReadCloser, entry, error) {
	gctx, cancel := context.WithCancel(ctx)
	watch := time.AfterFunc(c.timeout, cancel) // until the answer's headers
	out, err := c.api.GetObject(gctx, &awss3.GetObjectInput{Bucket: &bucket, Key: &key})
	fired := !watch.Stop()
	if err != nil {
		cancel()
		if fired && ctx.Err() == nil {
			err = fmt.Errorf("%w: no answer in %v", errIdle, c.timeout)
		}
		return nil, entry{}, c.wrap("get", key, err)
	}
	e := entry{name: key, size: aws.ToInt64(out.ContentLength), at: aws.ToTime(out.LastModified)}
	return &idleReader{c: c, key: key, body: out.Body, watch: watch, cancel: cancel, ctx: ctx}, e, nil
}

// Import opens s3://BUCKET/KEY, any object the client's credentials may
// read, and returns a reader of its bytes and its size.
func (c *Client) Import(ctx context.Context, rawURL string) (io.ReadCloser, int64, error) {
	bucket, key, err := ParseURL(rawURL)
	if err != nil {
		return nil, 0, err
	}
	if key == "" {
		return nil, 0, fmt.Errorf("store/s3: %q names a bucket but no key: want s3://BUCKET/KEY", rawURL)
	}
	r, e, err := c.getKey(ctx, bucket, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: no %s at %s", store.ErrNotFound, rawURL, c.endpoint)
	}
	return r, e.size, err
}

// errIdle: the endpoint sent nothing for the store's Timeout.
var errIdle = errors.New("store/s3: endpoint stalled")

// idleReader reads an object's body, cancelling the request when no bytes
// come for the store's Timeout, so a stalled endpoint fails the read.
type idleReader struct {
	c      *Client
	key    string
	ctx    context.Context // the caller's
	body   io.ReadCloser
	watch  *time.Timer
	cancel context.CancelFunc
	once   sync.Once
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.watch.Reset(r.c.timeout) // armed only while blocked here: a slow consumer is no stall
	n, err := r.body.Read(p)
	fired := !r.watch.Stop()
	if err != nil && err != io.EOF {
		if fired && r.ctx.Err() == nil {
			err = fmt.Errorf("%w: no bytes for %v", errIdle, r.c.timeout)
		}
		err = r.c.wrap("read", r.key, err)
	}
	return n, err
}

func (r *idleReader) Close() error {
	r.once.Do(func() {
		r.watch.Stop()
		r.cancel()
	})
	return r.body.Close()
}

// Stat returns an object's size and the time its bytes were written (its
// lease marker is not read: List and Touch report the lease).
func (s *Store) Stat(ctx context.Context, id string) (Info, error) {
	if !store.ValidID(id) {
		return Info{}, store.ErrInvalidID
	}
	e, err := s.head(ctx, s.objectKey(id))
	if errors.Is(err, store.ErrNotFound) {
		st := s.lock(id)
		e, err = s.headOrRestore(ctx, id)
		st.Unlock()
	}
	if err != nil {
		return Info{}, err
	}
	return Info{ID: id, Size: e.size, Created: leaseOf(e.at)}, nil
}

// List lists the objects, their lease markers and the trash, and returns
// every object (those in the trash too: reads still find them) with its
// lease.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	objs, err := s.listPrefix(ctx, s.key("objects/"))
	if err != nil {
		return nil, err
	}
	leases, err := s.listPrefix(ctx, s.key("leases/"))
	if err != nil {
		return nil, err
	}
	trash, err := s.listPrefix(ctx, s.key("trash/"))
	if err != nil {
		return nil, err
	}
	leaseAt := make(map[string]time.Time, len(leases))
	for _, l := range leases {
		leaseAt[l.name] = l.at
	}
	out := make([]Info, 0, len(objs))
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		if store.ValidID(o.name) {
			out = append(out, Info{ID: o.name, Size: o.size, Created: leaseOf(o.at, leaseAt[o.name])})
			seen[o.name] = true
		}
	}
	for _, t := range trash {
		if store.ValidID(t.name) && !seen[t.name] {
			out = append(out, Info{ID: t.name, Size: t.size, Created: leaseOf(leaseAt[t.name])})
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
