package client_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/pki"
)

// TestTLSTrust: a client trusts an HTTPS server by its CA file or by a
// pinned fingerprint (of the CA or of the server's own certificate); one
// that trusts neither fails at once, without retrying, saying what to give.
func TestTLSTrust(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrMakeCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.ServerCert([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "[]")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(dir, pki.CAFile)
	leafSum := sha256.Sum256(cert.Certificate[0])
	other, err := pki.LoadOrMakeCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, ca, fp string
		ok           bool
	}{
		{"system roots", "", "", false},
		{"CA file", caFile, "", true},
		{"CA fingerprint", "", ca.Fingerprint(), true},
		{"leaf fingerprint", "", fmt.Sprintf("sha256:%X", leafSum), true},
		{"another CA's fingerprint", "", other.Fingerprint(), false},
		{"another CA's fingerprint beside the right CA file", caFile, other.Fingerprint(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := client.TLSConfig(tc.ca, tc.fp)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = client.New(srv.URL).WithToken("").WithTLS(cfg).Jobs(ctx)
			var ut *client.UntrustedError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("jobs: %v", err)
			case !tc.ok && !errors.As(err, &ut):
				t.Fatalf("jobs: %v; want an *UntrustedError", err)
			case !tc.ok && (!strings.Contains(err.Error(), "--ca FILE") || time.Since(start) > client.DefaultRetryFor/2):
				t.Errorf("after %v: %v; want at once (not after retrying for %v), saying to give --ca", time.Since(start), err, client.DefaultRetryFor)
			}
		})
	}

	// A pinned CA vouches only for the names its certificate has: this
	// server's is for 127.0.0.1, not for localhost.
	cfg, err := client.TLSConfig("", ca.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	var ut *client.UntrustedError
	if _, err := client.New(byName).WithToken("").WithTLS(cfg).Jobs(ctx); !errors.As(err, &ut) {
		t.Errorf("pinned CA, server reached by a name its certificate lacks: %v; want an *UntrustedError", err)
	}

	if _, err := client.TLSConfig("", "sha256:1234"); err == nil {
		t.Error("a short fingerprint was accepted")
	}
	if _, err := client.TLSConfig(filepath.Join(dir, "none.pem"), ""); err == nil {
		t.Error("a missing CA file was accepted")
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := client.TLSConfig(junk, ""); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA file of junk: %v", err)
	}
}
