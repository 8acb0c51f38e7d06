// Package clustertls gives braid's TCP transports TLS 1.3 keyed to the
// cluster secret, so that mutual authentication and encryption are one
// step. Every holder of the secret derives the same certificate authority
// key from it (HKDF-SHA256 to an Ed25519 seed); each process makes its own
// key and a certificate that key signs, and each end of a connection
// presents its certificate and accepts only one that chains to the
// cluster's authority. A peer without the secret can neither read the
// traffic nor complete a handshake.
package clustertls

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"sync"
	"time"
)

// serverName is the name in every member's certificate; the cluster's
// authority, not a host name, is what is checked.
const serverName = "braid-data-plane"

// IsHandshake reports whether b, a connection's first byte, starts a TLS
// handshake record (0x16). braid's plaintext handshake starts with a
// two-byte length that is never that large.
func IsHandshake(b byte) bool { return b == 0x16 }

// Configs are the TLS configurations of one cluster secret.
type Configs struct {
	Client, Server *tls.Config
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
	seed, err := hkdf.Key(sha256.New, secret, nil, "braid data-plane CA v1", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	caKey := ed25519.NewKeyFromSeed(seed)
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
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
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
		Subject:      pkix.Name{CommonName: serverName},
		DNSNames:     []string{serverName},
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
		Client: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: serverName},
		Server: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert},
	}, nil
}
