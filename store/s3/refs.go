package s3

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/braidhq/braid/store"
)

// refsHeader is the first line of a published set of references, which
// the ids follow as 32 raw bytes each.
type refsHeader struct {
	Format string    `json:"format"` // refsFormat
	Owner  string    `json:"owner"`
	At     time.Time `json:"at"` // when the set was taken, by its owner's clock
	Final  bool      `json:"final,omitempty"`
	Count  int       `json:"count"`
}

const refsFormat = "braid-refs/1"

// PublishRefs writes this owner's set of references to servers/OWNER.
func (s *Store) PublishRefs(ctx context.Context, ids [][32]byte, final bool) error {
	h, _ := json.Marshal(refsHeader{Format: refsFormat, Owner: s.cfg.Owner, At: time.Now().UTC(), Final: final, Count: len(ids)})
	body := make([]byte, 0, len(h)+1+32*len(ids))
	body = append(append(body, h...), '\n')
	for _, id := range ids {
		body = append(body, id[:]...)
	}
	if _, err := s.putSmall(ctx, s.refsKey(s.cfg.Owner), body, false); err != nil {
		return err
	}
	return nil
}

// OthersRefs reads every other owner's published set.
func (s *Store) OthersRefs(ctx context.Context, fn func(id [32]byte)) error {
	owners, err := s.listPrefix(ctx, s.key("servers/"))
	if err != nil {
		return err
	}
	var stale error
	for _, o := range owners {
		if o.name == s.cfg.Owner {
			continue
		}
		h, err := s.readRefs(ctx, s.refsKey(o.name), fn)
		if err != nil {
			return err
		}
		if age := time.Since(h.At); !h.Final && age > s.cfg.StaleAfter {
			stale = fmt.Errorf("%w: server %s last published its references %v ago (bound %v) and did not stop cleanly; collection waits for it to restart, or for %s to be deleted if it is gone for good",
				store.ErrStaleRefs, o.name, age.Round(time.Second), s.cfg.StaleAfter, s.URL()+"/servers/"+o.name)
		}
	}
	return stale
}

// readRefs reads one published set, calling fn for each id.
func (s *Store) readRefs(ctx context.Context, key string, fn func(id [32]byte)) (refsHeader, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.api.GetObject(cctx, &awss3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(key)})
	if err != nil {
		return refsHeader{}, s.wrap("get", key, err)
	}
	defer out.Body.Close()
	br := bufio.NewReader(out.Body)
	line, err := br.ReadBytes('\n')
	var h refsHeader
	if err != nil || json.Unmarshal(bytes.TrimSpace(line), &h) != nil || h.Format != refsFormat {
		return h, fmt.Errorf("store/s3: %s is not a set of references this build reads (format %q): %w", key, h.Format, errBadRefs)
	}
	var id [32]byte
	for range h.Count {
		if _, err := io.ReadFull(br, id[:]); err != nil {
			return h, s.wrap("read", key, err)
		}
		fn(id)
	}
	return h, nil
}

var errBadRefs = errors.New("unreadable references")
