package clustertls

import (
	"crypto/x509"
	"testing"
	"time"
)

// TestSameSecretSameAuthority: two processes (two makeConfigs) with one
// secret accept each other's certificates; with another secret they do
// not. For caches per process, so this is what tells the authority's key
// is derived from the secret and not made at random.
func TestSameSecretSameAuthority(t *testing.T) {
	now := time.Now()
	a, err := makeConfigs([]byte("secret one"), now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := makeConfigs([]byte("secret one"), now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := makeConfigs([]byte("secret two"), now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(a.Cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{DNSName: ServerName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	opts.Roots = b.Pool
	if _, err := leaf.Verify(opts); err != nil {
		t.Errorf("a certificate of the same secret: %v", err)
	}
	opts.Roots = c.Pool
	if _, err := leaf.Verify(opts); err == nil {
		t.Error("a certificate of another secret verified")
	}
}
