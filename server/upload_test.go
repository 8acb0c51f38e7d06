package server_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/testlog"
)

// countingSeeker is a seekable body (so the client sends its length)
// that counts the bytes the client read from it.
type countingSeeker struct {
	*bytes.Reader
	n atomic.Int64
}

func (c *countingSeeker) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestOverLimitUploadRefusedAtOnce: an upload whose Content-Length is
// over the limit is refused before its body is read, with a 413 naming
// the size, the limit and the flag; a chunked one is cut off at the limit
// with the same words; the server logs both at WARN with size and limit.
func TestOverLimitUploadRefusedAtOnce(t *testing.T) {
	const limit = 1000
	logs := &testlog.Buffer{}
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), MaxObjectSize: limit, Logger: logs.Logger(slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const size = 64 << 20
	body := &countingSeeker{Reader: bytes.NewReader(make([]byte, size))}
	_, err = cl.Client.Put(ctx, body)
	want := fmt.Sprintf("object of %d bytes is over the server's limit of %d bytes (braid server --max-object)", size, limit)
	if apiCode(err) != api.CodeTooLarge || !strings.Contains(err.Error(), want) {
		t.Errorf("upload with a length: %v, want %s: %s", err, api.CodeTooLarge, want)
	}
	if n := body.n.Load(); n > size/4 {
		t.Errorf("the client sent %d of %d bytes before the refusal", n, size)
	}
	_, err = cl.Client.Put(ctx, io.LimitReader(zeroReader{}, 5000))
	want = fmt.Sprintf("object of more than %d bytes is over the server's limit of %d bytes (braid server --max-object)", limit, limit)
	if apiCode(err) != api.CodeTooLarge || !strings.Contains(err.Error(), want) {
		t.Errorf("chunked upload: %v, want %s: %s", err, api.CodeTooLarge, want)
	}
	for _, line := range []string{
		`level=WARN msg="request refused" role=server method=POST path=/v1/objects status=413 code=too_large`,
		fmt.Sprintf("size=%d limit=%d", size, limit),
		fmt.Sprintf("received=%d limit=%d chunked=true", limit+1, limit),
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("server log lacks %q:\n%s", line, logs.String())
		}
	}
}

// TestUploadExisting: uploading bytes already uploaded answers existing,
// with the first upload's time, not now.
func TestUploadExisting(t *testing.T) {
	cl := startCluster(t)
	c, ctx := cl.Client, testCtx(t)
	first, err := c.Put(ctx, strings.NewReader("same bytes"))
	if err != nil || first.Existing {
		t.Fatalf("first upload: %+v, %v", first, err)
	}
	time.Sleep(20 * time.Millisecond)
	again, err := c.Put(ctx, strings.NewReader("same bytes"))
	if err != nil || !again.Existing || again.ID != first.ID || !again.Created.Equal(first.Created) {
		t.Fatalf("second upload: %+v, %v; want existing, created %v", again, err, first.Created)
	}
	other, err := c.Put(ctx, strings.NewReader("other bytes"))
	if err != nil || other.Existing || !other.Created.After(first.Created) {
		t.Fatalf("upload of new bytes: %+v, %v", other, err)
	}
}
