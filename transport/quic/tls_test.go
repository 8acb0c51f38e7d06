package quic_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/quic"
	quicgo "github.com/quic-go/quic-go"
)

var tlsTestSecret = []byte("quic tls test secret")

// refusals is a listener's log of dropped peers and a count of Admit calls.
type refusals struct {
	mu     sync.Mutex // guards lines
	lines  []string
	admits atomic.Int64
}

func (r *refusals) config(secret []byte) transport.ListenConfig {
	return transport.ListenConfig{Secret: secret, RecStreams: 1, MaxStreams: 1,
		Logf: func(f string, a ...any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lines = append(r.lines, strings.TrimSpace(f)+" "+strings.Join(strs(a), " "))
		},
		// Logf's lines come a line per source address per interval;
		// Refused hears of every refusal.
		Refused: func(_ net.Addr, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lines = append(r.lines, "refused: "+err.Error())
		},
		Admit: func(_ transport.PeerInfo, n int) (int, func(), error) { r.admits.Add(1); return n, nil, nil }}
}

// waitFor waits for a logged line containing every one of subs.
func (r *refusals) waitFor(t *testing.T, subs ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, l := range r.lines {
			if containsAll(l, subs) {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Errorf("no log line with %q; logged %q", subs, r.lines)
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
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

// TestStrangerRefusedInTLS: a dialer without a certificate of the
// cluster, with none at all or a well-formed one from another secret, is
// refused in the TLS handshake: its connection ends with a TLS alert
// although it opened a stream and sent a hello at once, the listener logs
// ErrAuth from TLS, and Admit never runs.
func TestStrangerRefusedInTLS(t *testing.T) {
	other, err := otherSecretCert()
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another secret's": {other}} {
		t.Run(name, func(t *testing.T) {
			var r refusals
			ln, err := quic.New(quic.Config{}).Listen("127.0.0.1:0", r.config(tlsTestSecret))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tc := &tls.Config{Certificates: certs, InsecureSkipVerify: true, NextProtos: []string{"braid/1"}, MinVersion: tls.VersionTLS13}
			qc, err := quicgo.DialAddr(ctx, ln.Addr().String(), tc, &quicgo.Config{})
			if err == nil {
				defer qc.CloseWithError(0, "")
				if st, err := qc.OpenStream(); err == nil {
					_, _ = st.Write([]byte("\x00\x05hello"))
				}
				select {
				case <-qc.Context().Done():
					err = context.Cause(qc.Context())
				case <-ctx.Done():
					t.Fatal("a dialer without the cluster's certificate kept its connection")
				}
			}
			var te *quicgo.TransportError
			if !errors.As(err, &te) || !te.ErrorCode.IsCryptoError() {
				t.Errorf("connection ended by %v; want a TLS alert", err)
			}
			r.waitFor(t, transport.ErrAuth.Error(), "TLS")
			if n := r.admits.Load(); n != 0 {
				t.Errorf("Admit called %d times", n)
			}
		})
	}
}

// TestRootCAs: with Config.RootCAs a dialer verifies the listener's
// operator-issued Config.Certificate instead of the cluster's; the
// listener still requires the dialer's cluster certificate, and a dialer
// with RootCAs refuses a listener presenting only the cluster's.
func TestRootCAs(t *testing.T) {
	pool, cert, err := operatorPKI("braid-worker.example")
	if err != nil {
		t.Fatal(err)
	}
	withPKI := quic.New(quic.Config{Certificate: &cert, RootCAs: pool, ServerName: "braid-worker.example"})
	dial := func(tr transport.Transport, addr string, secret []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, err := tr.Dial(ctx, addr, transport.DialConfig{Secret: secret, RecStreams: 1, MaxStreams: 1})
		if err == nil {
			a.Abort(errors.New("test done"))
		}
		return err
	}

	var r refusals
	ln, err := withPKI.Listen("127.0.0.1:0", r.config(tlsTestSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			a, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			a.Abort(errors.New("test done"))
		}
	}()
	if err := dial(withPKI, ln.Addr().String(), tlsTestSecret); err != nil {
		t.Errorf("dial with RootCAs to the operator's certificate: %v", err)
	}
	if err := dial(withPKI, ln.Addr().String(), []byte("another secret")); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("dial with RootCAs but another secret: %v; want ErrAuth", err)
	}
	r.waitFor(t, transport.ErrAuth.Error(), "TLS")

	plain, err := quic.New(quic.Config{}).Listen("127.0.0.1:0", (&refusals{}).config(tlsTestSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := dial(withPKI, plain.Addr().String(), tlsTestSecret); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("dial with RootCAs to the cluster's certificate: %v; want ErrAuth", err)
	}
}

// operatorPKI makes an authority and a certificate it issued for name.
func operatorPKI(name string) (*x509.CertPool, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "operator CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// otherSecretCert is the certificate another cluster's secret gives.
func otherSecretCert() (tls.Certificate, error) {
	tc, err := strangerTLS()
	if err != nil {
		return tls.Certificate{}, err
	}
	return tc.Certificates[0], nil
}
