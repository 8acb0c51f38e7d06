package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCAPersists: the CA is made once and read back the same, so clients
// keep trusting a restarted server; a half-present CA is an error, never
// silently replaced.
func TestCAPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	ca, err := LoadOrMakeCA(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, caKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA key file: %v, %v; want mode 0600", fi, err)
	}
	again, err := LoadOrMakeCA(dir, now)
	if err != nil || again.Fingerprint() != ca.Fingerprint() {
		t.Fatalf("reloaded CA %v, %v; want fingerprint %s", again, err, ca.Fingerprint())
	}
	if !strings.HasPrefix(ca.Fingerprint(), "sha256:") || len(ca.Fingerprint()) != 7+64 {
		t.Errorf("fingerprint %q", ca.Fingerprint())
	}

	if err := os.Remove(filepath.Join(dir, CAFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrMakeCA(dir, now); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("CA without its certificate: %v; want an error saying it is incomplete", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrMakeCA(dir, now); err == nil {
		t.Error("a CA certificate file of junk was accepted")
	}
}

// TestServerCertVerifies: the server certificate verifies against the CA
// for each host it was made for, and for no other.
func TestServerCertVerifies(t *testing.T) {
	ca, err := LoadOrMakeCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hosts := Hosts("10.1.2.3:7070", []string{"braid.example.org"})
	for _, want := range []string{"10.1.2.3", "localhost", "127.0.0.1", "::1", "braid.example.org"} {
		if !slices.Contains(hosts, want) {
			t.Errorf("Hosts lacks %s: %v", want, hosts)
		}
	}
	if slices.Contains(Hosts("0.0.0.0:7070", nil), "0.0.0.0") {
		t.Error("Hosts names the unspecified address")
	}
	cert, err := ca.ServerCert(hosts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, h := range []string{"10.1.2.3", "localhost", "127.0.0.1", "braid.example.org"} {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: h}); err != nil {
			t.Errorf("verify for %s: %v", h, err)
		}
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "evil.example.org"}); err == nil {
		t.Error("the certificate verifies for a host it was not made for")
	}
	other, err := LoadOrMakeCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool2 := x509.NewCertPool()
	pool2.AddCert(other.Cert)
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool2, DNSName: "localhost"}); err == nil {
		t.Error("the certificate verifies against another CA")
	}
}
