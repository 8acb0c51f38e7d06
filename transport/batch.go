package transport

import "context"

// BatchSender is an Association that sends several messages of a stream
// with fewer system calls than a Send each (the TCP transports write them
// in one go). A caller that has several messages for a stream at once, such
// as a server placing several units on one worker, hands them over
// together with SendBatch.
type BatchSender interface {
	// SendBatch sends msgs on stream s, in order, each as one message,
	// exactly as a Send of each in turn would: the peer cannot tell the
	// difference. It returns nil once all are sent; on an error a prefix
	// of msgs may have been sent, as with a failed Send in a loop. The
	// caller may reuse msgs and the messages once it returns.
	SendBatch(ctx context.Context, s int, msgs [][]byte) error
}

// BatchReceiver is an Association that hands over the messages a stream
// has received already in one call.
type BatchReceiver interface {
	// RecvBatch waits for the next message on stream s, as Recv does, and
	// appends it and then every further message already received on s, up
	// to max in all, to msgs. The messages are owned by the caller.
	RecvBatch(ctx context.Context, s int, msgs [][]byte, max int) ([][]byte, error)
}

// SendBatch sends msgs on stream s of a in order: by a's SendBatch if a is a
// BatchSender, otherwise by a Send each.
func SendBatch(ctx context.Context, a Association, s int, msgs [][]byte) error {
	if b, ok := a.(BatchSender); ok && len(msgs) > 1 {
		return b.SendBatch(ctx, s, msgs)
	}
	for _, m := range msgs {
		if err := a.Send(ctx, s, m); err != nil {
			return err
		}
	}
	return nil
}

// RecvBatch appends to msgs the next message on stream s of a and, if a is a
// BatchReceiver, the messages already received after it, up to max in all
// (at least one).
func RecvBatch(ctx context.Context, a Association, s int, msgs [][]byte, max int) ([][]byte, error) {
	if b, ok := a.(BatchReceiver); ok && max > 1 {
		return b.RecvBatch(ctx, s, msgs, max)
	}
	m, err := a.Recv(ctx, s)
	if err != nil {
		return msgs, err
	}
	return append(msgs, m), nil
}
