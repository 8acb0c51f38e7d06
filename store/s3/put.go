package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/braidhq/braid/store"
)

// PutBytes stores p: one request when the object is new, a refresh of its
// lease when it exists.
func (s *Store) PutBytes(ctx context.Context, p []byte) (Info, error) {
	if int64(len(p)) > s.cfg.MaxSize {
		return Info{}, fmt.Errorf("%w: %d bytes, limit %d", store.ErrTooLarge, len(p), s.cfg.MaxSize)
	}
	sum := sha256.Sum256(p)
	return s.publish(ctx, hex.EncodeToString(sum[:]), int64(len(p)), func(ctx context.Context, key string) (bool, error) {
		return s.putSmall(ctx, key, p, true)
	})
}

// Put stores what r yields. An object that fits in one part goes in one
// request to its final key, its id known by then; a bigger one streams as
// a multipart upload to a temporary key of this owner, hashed on the way,
// and is published with one copy to its final key once the id is known.
func (s *Store) Put(ctx context.Context, r io.Reader) (Info, error) {
	r = ctxReader{ctx, r}
	var first bytes.Buffer // grows with what comes: a small object costs no part-sized buffer
	_, err := io.CopyN(&first, r, s.cfg.PartSize)
	switch {
	case err == io.EOF:
		return s.PutBytes(ctx, first.Bytes())
	case err != nil:
		return Info{}, fmt.Errorf("store/s3: reading the object: %w", err)
	}
	return s.putMultipart(ctx, io.MultiReader(&first, r))
}

// publish makes object id (size bytes) visible, or refreshes it if it is
// there: write puts it under the key given, reporting whether the key
// existed already.
//
// Order matters across servers: a refresh writes the lease marker first
// and only then checks that the object exists, so a collector on another
// server that removed the object after checking the lease sees the fresh
// marker when it checks again, and restores the object from the trash.
// The write itself needs no lock: a removal can only find the object it
// writes fresh.
func (s *Store) publish(ctx context.Context, id string, size int64, write func(context.Context, string) (bool, error)) (Info, error) {
	if info, ok, err := s.refreshIfThere(ctx, id, size); ok || err != nil {
		return info, err
	}
	now := time.Now()
	existed, err := write(ctx, s.objectKey(id))
	if err != nil {
		return Info{}, err
	}
	st := s.lock(id)
	st.remember(id, now)
	st.Unlock()
	if !existed {
		s.counted(1, size)
	}
	return Info{ID: id, Size: size, Created: leaseOf(now), Existing: existed}, nil
}

// refreshIfThere refreshes object id if it exists, and says whether it did.
func (s *Store) refreshIfThere(ctx context.Context, id string, size int64) (Info, bool, error) {
	st := s.lock(id)
	defer st.Unlock()
	if at, ok := st.recent(id, s.cfg.TouchEvery, time.Now()); ok {
		return Info{ID: id, Size: size, Created: at, Existing: true}, true, nil
	}
	_, err := s.head(ctx, s.objectKey(id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Info{}, false, nil
	case err != nil:
		return Info{}, false, err
	}
	info, err := s.refreshLocked(ctx, st, id)
	if errors.Is(err, store.ErrNotFound) {
		return Info{}, false, nil // removed meanwhile: write it anew
	}
	info.Existing = true
	return info, err == nil, err
}

// putMultipart streams r to a temporary key in parts, then publishes it.
func (s *Store) putMultipart(ctx context.Context, r io.Reader) (Info, error) {
	var rnd [12]byte
	rand.Read(rnd[:])
	tmp := s.tmpPrefix() + hex.EncodeToString(rnd[:])
	up, err := s.startUpload(ctx, tmp)
	if err != nil {
		return Info{}, err
	}
	h := sha256.New()
	size, err := up.send(ctx, io.TeeReader(io.LimitReader(r, s.cfg.MaxSize+1), h))
	if err == nil && size > s.cfg.MaxSize {
		err = fmt.Errorf("%w: more than %d bytes", store.ErrTooLarge, s.cfg.MaxSize)
	}
	if err == nil {
		err = up.complete(ctx)
	}
	// The temporary key goes whatever happens, with a context of its own:
	// a Put whose caller gave up must not leave it behind.
	defer s.cleanupTmp(up, err == nil)
	if err != nil {
		return Info{}, err
	}
	id := hex.EncodeToString(h.Sum(nil))
	return s.publish(ctx, id, size, func(ctx context.Context, key string) (bool, error) {
		return false, s.copyKey(ctx, tmp, key, size)
	})
}

// cleanupTmp aborts an unfinished upload or deletes a completed one's
// temporary object. A failure only leaves work for the next Open.
func (s *Store) cleanupTmp(up *upload, completed bool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var err error
	if completed {
		err = s.deleteKey(ctx, up.key)
	} else {
		_, err = s.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &up.key, UploadId: &up.id})
	}
	if err != nil && !isNotFound(err) {
		s.cfg.Logger.Warn("store/s3: leaving a temporary upload for the next start to remove", "key", up.key, "err", err)
	}
}

// upload is one multipart upload in progress.
type upload struct {
	s     *Store
	key   string
	id    string
	parts []types.CompletedPart
}

func (s *Store) startUpload(ctx context.Context, key string) (*upload, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.api.CreateMultipartUpload(cctx, &awss3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return nil, s.wrap("start upload", key, err)
	}
	return &upload{s: s, key: key, id: aws.ToString(out.UploadId)}, nil
}

// send reads r a part at a time and uploads the parts, up to Uploads at
// once, and returns how many bytes r gave. Reading stays in order, so a
// hash r feeds is of the whole object.
func (u *upload) send(ctx context.Context, r io.Reader) (int64, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.s.cfg.Uploads)
	var mu sync.Mutex // guards etags
	etags := map[int32]*string{}
	var size int64
	var n int32
	for {
		buf := make([]byte, u.s.cfg.PartSize)
		k, err := io.ReadFull(r, buf)
		size += int64(k)
		if k > 0 || n == 0 {
			n++
			part, body := n, buf[:k]
			g.Go(func() error {
				etag, err := u.sendPart(gctx, part, body)
				mu.Lock()
				etags[part] = etag
				mu.Unlock()
				return err
			})
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			g.Wait()
			return size, fmt.Errorf("store/s3: reading the object: %w", err)
		}
		if size > u.s.cfg.MaxSize || gctx.Err() != nil {
			break
		}
	}
	if err := g.Wait(); err != nil {
		return size, err
	}
	for i := int32(1); i <= n; i++ {
		u.parts = append(u.parts, types.CompletedPart{PartNumber: aws.Int32(i), ETag: etags[i]})
	}
	return size, ctx.Err()
}

func (u *upload) sendPart(ctx context.Context, n int32, body []byte) (*string, error) {
	cctx, cancel := context.WithTimeout(ctx, u.s.transferTimeout(int64(len(body))))
	defer cancel()
	out, err := u.s.api.UploadPart(cctx, &awss3.UploadPartInput{Bucket: &u.s.bucket, Key: &u.key, UploadId: &u.id,
		PartNumber: aws.Int32(n), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}, unsignedPayload)
	if err != nil {
		return nil, u.s.wrap(fmt.Sprintf("upload part %d of", n), u.key, err)
	}
	return out.ETag, nil
}

// unsignedPayload skips the SDK's sha256 of each part for the request's
// signature (the x-amz-content-sha256 header says UNSIGNED-PAYLOAD): the
// content is hashed once, by Put, for its id; TLS, where the endpoint
// uses it, protects the bytes on the way.
func unsignedPayload(o *awss3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

func (u *upload) complete(ctx context.Context) error {
	cctx, cancel := u.s.call(ctx)
	defer cancel()
	_, err := u.s.api.CompleteMultipartUpload(cctx, &awss3.CompleteMultipartUploadInput{Bucket: &u.s.bucket, Key: &u.key,
		UploadId: &u.id, MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts}})
	return u.s.wrap("complete upload", u.key, err)
}

// ctxReader fails reads once ctx has ended, so that a Put whose caller
// gave up stops at the next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
