package quic

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	quicgo "github.com/quic-go/quic-go"
)

var secret = []byte("quic test secret")

// TestBadPeerIsAborted: a peer that breaks the framing on a data stream is
// aborted with a logged reason, its threads are released, and the listener
// goes on serving.
func TestBadPeerIsAborted(t *testing.T) {
	cases := map[string]struct {
		index []byte
		data  []byte
		want  string
	}{
		"huge length":     {[]byte{0, 0}, []byte{0xff, 0xff, 0xff, 0xff}, "message of"},
		"bad index":       {[]byte{0, 7}, nil, "out of range"},
		"control garbage": {nil, []byte("junk"), "control stream"},
	}
	tr := New(Config{})
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var released atomic.Int64
			var mu sync.Mutex
			var logs []string
			lc := transport.ListenConfig{Secret: secret, RecStreams: 1, MaxStreams: 1,
				Logf: func(f string, a ...any) {
					mu.Lock()
					defer mu.Unlock()
					logs = append(logs, strings.TrimSpace(f)+" "+strings.TrimSpace(strings.Join(strs(a), " ")))
				},
				Admit: func(_ transport.PeerInfo, n int) (int, func(), error) { return n, func() { released.Add(1) }, nil }}
			ln, err := tr.Listen("127.0.0.1:0", lc)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			qc := badPeer(t, tr, ln.Addr().String(), c.index, c.data)
			select {
			case <-qc.Context().Done():
			case <-time.After(5 * time.Second):
				t.Fatal("misbehaving peer was not disconnected")
			}
			deadline := time.Now().Add(2 * time.Second)
			for released.Load() != 1 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			joined := strings.Join(logs, "\n")
			mu.Unlock()
			if !strings.Contains(joined, c.want) || released.Load() != 1 {
				t.Errorf("logs %q (want %q), release called %d times", joined, c.want, released.Load())
			}
		})
	}
}

func strs(a []any) []string {
	var out []string
	for _, x := range a {
		if e, ok := x.(error); ok {
			out = append(out, e.Error())
		}
	}
	return out
}

// badPeer handshakes with raw quic-go, then writes index and data on a new
// stream (or opens stream 0 properly and writes data on the control stream
// when index is nil).
func badPeer(t *testing.T, tr *Transport, addr string, index, data []byte) *quicgo.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tc, err := tr.clientTLS(addr, secret)
	if err != nil {
		t.Fatal(err)
	}
	qc, err := quicgo.DialAddr(ctx, addr, tc, tr.cfg.quicConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	ctl, _ := qc.OpenStreamSync(ctx)
	if _, err := transport.DialHandshake(ctx, hsConn{ctl}, transport.DialConfig{Secret: secret}); err != nil {
		t.Fatal(err)
	}
	st, _ := qc.OpenStreamSync(ctx)
	if index == nil {
		_, _ = st.Write([]byte{0, 0})
		_, _ = ctl.Write(data)
		return qc
	}
	_, _ = st.Write(append(index, data...))
	return qc
}
