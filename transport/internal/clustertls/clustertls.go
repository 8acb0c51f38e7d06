// Package clustertls gives braid's transports TLS keyed to the cluster
// secret, so that mutual authentication and encryption are one step: TLS
// 1.3 for the TCP transports, and the same certificates for DTLS 1.2 under
// sctp (transport/sctp). Every holder of the secret derives the same certificate authority
// key from it (HKDF-SHA256 to an Ed25519 seed); each process makes its own
// key and a certificate that key signs, and each end of a connection
// presents its certificate and accepts only one that chains to the
// cluster's authority. A peer without the secret can neither read the
// traffic nor complete a handshake.
package clustertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// ServerName is the name in every member's certificate; the cluster's
// authority, not a host name, is what is checked.
const ServerName = "braid-data-plane"

// IsHandshake reports whether b, a connection's first byte, starts a TLS
// handshake record (0x16). braid's plaintext handshake starts with a
// two-byte length that is never that large.
func IsHandshake(b byte) bool { return b == 0x16 }

// Configs are the TLS configurations of one cluster secret.
type Configs struct {
	Client, Server *tls.Config
	// Cert is this process's certificate and key, and Pool holds the
	// cluster's authority, for a DTLS stack to build its own configuration
	// from.
	Cert tls.Certificate
	Pool *x509.CertPool
}

var (
	mu    sync.Mutex
	cache = map[[sha256.Size]byte]*Configs{}
)

// For returns the configurations of secret, made once per process.
func For(secret []byte) (*Configs, error) {
	if len(secret) == 0 {
		return nil, errors.New("clustertls: no cluster secret")
	}
	key := sha256.Sum256(secret)
	mu.Lock()
	defer mu.Unlock()
	if c, ok := cache[key]; ok {
		return c, nil
	}
	c, err := makeConfigs(secret, time.Now())
	if err != nil {
		return nil, err
	}
	cache[key] = c
	return c, nil
}

func makeConfigs(secret []byte, now time.Time) (*Configs, error) {
	caKey, err := authorityKey(secret)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "braid cluster data plane"},
		NotBefore:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Configs{
		Cert: cert, Pool: pool,
		Client: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: ServerName},
		Server: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert},
	}, nil
}

// authorityKey derives the cluster authority's ECDSA P-256 key from the
// secret. (Not Ed25519: pion/dtls v3 refuses a certificate that an Ed25519
// key signed, so DTLS under sctp could not use the authority.) HKDF's
// output is the scalar; the rare output not below the curve's order is
// skipped by deriving again with the next counter.
func authorityKey(secret []byte) (*ecdsa.PrivateKey, error) {
	for i := range 16 {
		d, err := hkdf.Key(sha256.New, secret, nil, fmt.Sprintf("braid data-plane CA v2 P-256 %d", i), 32)
		if err != nil {
			return nil, err
		}
		if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d); err == nil {
			return k, nil
		}
	}
	return nil, errors.New("clustertls: no P-256 key derived from the secret")
}
