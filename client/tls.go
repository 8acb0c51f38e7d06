package client

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// TLSConfig is the tls.Config of a client that trusts the CA
// certificates in caFile (PEM), or the server whose certificate chain holds
// one with the given fingerprint (sha256:HEX, of a CA or of the server's
// own certificate; given both, the fingerprint decides). With neither it
// is nil: the system's roots.
func TLSConfig(caFile, fingerprint string) (*tls.Config, error) {
	if caFile == "" && fingerprint == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--ca %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	if fingerprint != "" {
		want, err := parseFingerprint(fingerprint)
		if err != nil {
			return nil, err
		}
		// The chain is checked here instead of against roots: a pinned
		// fingerprint is the trust anchor. The server's certificate must
		// still be valid now and for server authentication.
		cfg.InsecureSkipVerify = true
		cfg.RootCAs = nil // with both, the pin decides
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if err := verifyPinned(cs, want); err != nil {
				return &pinError{err}
			}
			return nil
		}
	}
	return cfg, nil
}

func parseFingerprint(s string) ([]byte, error) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	h = strings.ReplaceAll(h, ":", "")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("--ca-fingerprint %q: want sha256: and 64 hex digits, as the server logs it", s)
	}
	return b, nil
}

// verifyPinned accepts a chain that holds a certificate with the pinned
// SHA-256 and whose leaf that certificate (or the leaf itself) vouches for.
func verifyPinned(cs tls.ConnectionState, want []byte) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("the server sent no certificate")
	}
	for _, c := range certs {
		sum := sha256.Sum256(c.Raw)
		if subtle.ConstantTimeCompare(sum[:], want) != 1 {
			continue
		}
		pool := x509.NewCertPool()
		pool.AddCert(c)
		inter := x509.NewCertPool()
		for _, ic := range certs[1:] {
			inter.AddCert(ic)
		}
		// The name is checked too when the client sent one (SNI: a host
		// name, not an IP address), so that pinning a CA that also signs
		// for others accepts only this server's certificates.
		opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSName: cs.ServerName}
		if bytes.Equal(c.Raw, certs[0].Raw) { // the leaf pinned itself
			if time.Now().After(c.NotAfter) || time.Now().Before(c.NotBefore) {
				return fmt.Errorf("the pinned certificate is not valid now (%s to %s)", c.NotBefore, c.NotAfter)
			}
			return nil
		}
		if _, err := certs[0].Verify(opts); err != nil {
			return fmt.Errorf("the server's certificate does not verify against the pinned one: %w", err)
		}
		return nil
	}
	return errors.New("no certificate the server sent has the fingerprint given (--ca-fingerprint): pin the CA whose fingerprint the server logs at start")
}

// pinError is a server certificate the pinned fingerprint does not vouch for.
type pinError struct{ err error }

func (e *pinError) Error() string { return e.err.Error() }

// UntrustedError is a server whose TLS certificate the client does not
// trust: it is never retried.
type UntrustedError struct {
	URL string
	Err error
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("the certificate of the braid server at %s is not trusted (%v): give --ca FILE (the server's DATA/tls/ca.pem) or --ca-fingerprint sha256:... (in the server's log), or $BRAID_CA / $BRAID_CA_FINGERPRINT",
		e.URL, e.Err)
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// untrusted reports whether err is a failed check of the server's
// certificate.
func untrusted(err error) bool {
	var cv *tls.CertificateVerificationError
	var pe *pinError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &pe) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}
