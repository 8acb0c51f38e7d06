package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/braidhq/braid/transport"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeAssoc is an association whose Send and Recv are function fields.
type fakeAssoc struct {
	transport.Association // nil: other methods are not called
	send                  func(p []byte) error
	recv                  func() ([]byte, error)
}

func (f *fakeAssoc) Send(_ context.Context, _ int, p []byte) error { return f.send(p) }
func (f *fakeAssoc) Recv(context.Context, int) ([]byte, error)     { return f.recv() }

func TestTrafficCounts(t *testing.T) {
	tr := NewTraffic("tcp", "quic")
	fail := false
	a := tr.Wrap(&fakeAssoc{
		send: func([]byte) error {
			if fail {
				return transport.ErrClosed
			}
			return nil
		},
		recv: func() ([]byte, error) {
			if fail {
				return nil, transport.ErrPeerClosed
			}
			return make([]byte, 7), nil
		},
	}, "tcp")
	ctx := context.Background()
	for range 3 {
		if err := a.Send(ctx, 0, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Recv(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fail = true // failed calls count nothing
	if err := a.Send(ctx, 0, make([]byte, 100)); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send error %v, want the inner one", err)
	}
	if _, err := a.Recv(ctx, 0); !errors.Is(err, transport.ErrPeerClosed) {
		t.Fatalf("Recv error %v, want the inner one", err)
	}
	want := `
# HELP braid_transport_bytes_total Payload bytes of the data-plane messages sent or received on associations, by transport (not counting the transport's framing).
# TYPE braid_transport_bytes_total counter
braid_transport_bytes_total{direction="received",transport="quic"} 0
braid_transport_bytes_total{direction="received",transport="tcp"} 7
braid_transport_bytes_total{direction="sent",transport="quic"} 0
braid_transport_bytes_total{direction="sent",transport="tcp"} 300
# HELP braid_transport_messages_total Data-plane messages sent or received on associations, by transport.
# TYPE braid_transport_messages_total counter
braid_transport_messages_total{direction="received",transport="quic"} 0
braid_transport_messages_total{direction="received",transport="tcp"} 1
braid_transport_messages_total{direction="sent",transport="quic"} 0
braid_transport_messages_total{direction="sent",transport="tcp"} 3
`
	if err := testutil.CollectAndCompare(tr, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(tr); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// BenchmarkTrafficSend is the counting's cost on a Send.
func BenchmarkTrafficSend(b *testing.B) {
	a := NewTraffic("tcp").Wrap(&fakeAssoc{send: func([]byte) error { return nil }}, "tcp")
	p := make([]byte, 1024)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = a.Send(ctx, 0, p)
	}
}

// batchAssoc is a fakeAssoc that sends batches, counting its calls.
type batchAssoc struct {
	fakeAssoc
	batches int
}

func (b *batchAssoc) SendBatch(_ context.Context, _ int, msgs [][]byte) error {
	b.batches++
	return nil
}

// TestTrafficBatch: a counted association keeps the batches of the one it
// counts (a server's units to one worker in one write), and counts every
// message of a batch.
func TestTrafficBatch(t *testing.T) {
	tr := NewTraffic("tcp")
	inner := &batchAssoc{fakeAssoc: fakeAssoc{send: func([]byte) error {
		t.Error("a message of a batch sent alone")
		return nil
	}}}
	a := tr.Wrap(inner, "tcp")
	msgs := [][]byte{make([]byte, 10), make([]byte, 20), make([]byte, 30)}
	if err := transport.SendBatch(context.Background(), a, 0, msgs); err != nil {
		t.Fatal(err)
	}
	if inner.batches != 1 {
		t.Errorf("3 messages went out in %d batches, want 1", inner.batches)
	}
	want := `
# HELP braid_transport_messages_total Data-plane messages sent or received on associations, by transport.
# TYPE braid_transport_messages_total counter
braid_transport_messages_total{direction="received",transport="tcp"} 0
braid_transport_messages_total{direction="sent",transport="tcp"} 3
`
	if err := testutil.CollectAndCompare(tr, strings.NewReader(want), "braid_transport_messages_total"); err != nil {
		t.Fatal(err)
	}
}
