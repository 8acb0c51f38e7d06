package metrics

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/braidhq/braid/transport"
	"github.com/prometheus/client_golang/prometheus"
)

// Traffic counts the messages and bytes sent and received on associations,
// per transport: braid_transport_messages_total and
// braid_transport_bytes_total, labelled transport and direction ("sent",
// "received"). Bytes are message payloads as braid hands them to the
// transport and gets them back, not the bytes on the wire (no framing,
// headers or retransmissions). It is a prometheus.Collector and safe for
// concurrent use.
type Traffic struct {
	mu   sync.Mutex // guards by
	by   map[string]*counts
	msgs *prometheus.Desc
	byts *prometheus.Desc
}

// counts is one transport's traffic; Send and Recv add to it atomically.
type counts struct {
	sentMsgs, sentBytes, recvMsgs, recvBytes atomic.Uint64
}

// NewTraffic returns a Traffic with every transport named at zero, so that
// their series exist before the first association.
func NewTraffic(transports ...string) *Traffic {
	t := &Traffic{by: map[string]*counts{},
		msgs: prometheus.NewDesc("braid_transport_messages_total",
			"Data-plane messages sent or received on associations, by transport.",
			[]string{"transport", "direction"}, nil),
		byts: prometheus.NewDesc("braid_transport_bytes_total",
			"Payload bytes of the data-plane messages sent or received on associations, by transport (not counting the transport's framing).",
			[]string{"transport", "direction"}, nil),
	}
	for _, name := range transports {
		t.of(name)
	}
	return t
}

func (t *Traffic) of(name string) *counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.by[name]
	if c == nil {
		c = &counts{}
		t.by[name] = c
	}
	return c
}

// Wrap returns a that counts its messages under transport name. The
// returned association behaves as a does in every other way.
func (t *Traffic) Wrap(a transport.Association, name string) transport.Association {
	return &countedAssoc{Association: a, c: t.of(name)}
}

// Describe implements prometheus.Collector.
func (t *Traffic) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.msgs
	ch <- t.byts
}

// Collect implements prometheus.Collector.
func (t *Traffic) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, c := range t.by {
		ch <- prometheus.MustNewConstMetric(t.msgs, prometheus.CounterValue, float64(c.sentMsgs.Load()), name, "sent")
		ch <- prometheus.MustNewConstMetric(t.msgs, prometheus.CounterValue, float64(c.recvMsgs.Load()), name, "received")
		ch <- prometheus.MustNewConstMetric(t.byts, prometheus.CounterValue, float64(c.sentBytes.Load()), name, "sent")
		ch <- prometheus.MustNewConstMetric(t.byts, prometheus.CounterValue, float64(c.recvBytes.Load()), name, "received")
	}
}

// countedAssoc counts what Send sent and Recv returned.
type countedAssoc struct {
	transport.Association
	c *counts
}

var _ transport.Association = (*countedAssoc)(nil)

// Unwrap returns the association counted, for callers that look for its
// optional methods.
func (a *countedAssoc) Unwrap() transport.Association { return a.Association }

func (a *countedAssoc) Send(ctx context.Context, s int, p []byte) error {
	err := a.Association.Send(ctx, s, p)
	if err == nil {
		a.c.sentMsgs.Add(1)
		a.c.sentBytes.Add(uint64(len(p)))
	}
	return err
}

func (a *countedAssoc) Recv(ctx context.Context, s int) ([]byte, error) {
	p, err := a.Association.Recv(ctx, s)
	if err == nil {
		a.c.recvMsgs.Add(1)
		a.c.recvBytes.Add(uint64(len(p)))
	}
	return p, err
}

var (
	_ transport.BatchSender   = (*countedAssoc)(nil)
	_ transport.BatchReceiver = (*countedAssoc)(nil)
)

// SendBatch sends msgs as the association counted does (transport.SendBatch)
// and counts them once all are sent: a batch that fails counts none, though
// some may have gone (the association is failing then).
func (a *countedAssoc) SendBatch(ctx context.Context, s int, msgs [][]byte) error {
	err := transport.SendBatch(ctx, a.Association, s, msgs)
	if err == nil {
		a.c.sentMsgs.Add(uint64(len(msgs)))
		for _, p := range msgs {
			a.c.sentBytes.Add(uint64(len(p)))
		}
	}
	return err
}

// RecvBatch receives as the association counted does (transport.RecvBatch)
// and counts what it appended.
func (a *countedAssoc) RecvBatch(ctx context.Context, s int, msgs [][]byte, max int) ([][]byte, error) {
	n := len(msgs)
	msgs, err := transport.RecvBatch(ctx, a.Association, s, msgs, max)
	a.c.recvMsgs.Add(uint64(len(msgs) - n))
	for _, p := range msgs[n:] {
		a.c.recvBytes.Add(uint64(len(p)))
	}
	return msgs, err
}
