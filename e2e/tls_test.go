package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/pki"
	"github.com/braidhq/braid/internal/testport"
	"github.com/braidhq/braid/netem/relay"
	"github.com/braidhq/braid/ops/samples"
)

var fingerprintRE = regexp.MustCompile(`ca_fingerprint=(sha256:[0-9a-f]{64})`)

// TestTLSControlPlane: a server with --tls makes a CA in its data
// directory and serves HTTPS; the CLI and a worker that trust the CA (by
// file or by fingerprint) run a job through it, those that do not are told
// what to give, and a restart keeps the CA.
func TestTLSControlPlane(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, "server", "--listen", "127.0.0.1:0", "--data", dir, "--tls")
	c := connect(t, srv, dir)
	if !strings.HasPrefix(c.URL(), "https://") {
		t.Fatalf("server URL %s, want https://", c.URL())
	}
	fp := srv.waitLog(t, fingerprintRE)
	caFile := filepath.Join(dir, "tls", pki.CAFile)

	code, _, stderr := cliExit(t, c, "jobs", "--timeout", "10s")
	if code != 1 || !strings.Contains(stderr, "is not trusted") || !strings.Contains(stderr, "--ca FILE") {
		t.Errorf("jobs without --ca: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := cliExit(t, c, "jobs", "--ca", caFile); code != 0 {
		t.Errorf("jobs --ca: exit %d, %s", code, stderr)
	}

	w := start(t, "worker", "--server", c.URL(), "--ca", caFile, "--threads", "2", "--name", "tw", "--transport", "tcp")
	tlsCfg, err := client.TLSConfig(caFile, "")
	if err != nil {
		t.Fatal(err)
	}
	waitWorkersUp(t, c.WithTLS(tlsCfg), 1)
	in := filepath.Join(t.TempDir(), "in.gif")
	if err := os.WriteFile(in, samples.GIF(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, stderr := cliExit(t, c, "put", "--ca-fingerprint", fp, in)
	id := strings.TrimSpace(out)
	if len(id) != 64 {
		t.Fatalf("put --ca-fingerprint: %q, %s", out, stderr)
	}
	code, _, stderr = cliExit(t, c, "submit", "--ca", caFile, "--op", "grayscale", "--input", id, "--repeat", "4", "--wait")
	if code != 0 {
		t.Fatalf("submit --wait over HTTPS: exit %d, %s\nworker log:\n%s", code, stderr, w.logText())
	}

	// A worker without the CA stops at once, saying why.
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cliExit(t, c, "worker", "--secret-file", secretFile, "--threads", "1", "--name", "blind")
	if code != 1 || !strings.Contains(stderr, "is not trusted") {
		t.Errorf("worker without --ca: exit %d, stderr %q", code, stderr)
	}
	// Plain HTTP to it is told to use https://.
	plain := client.New(strings.Replace(c.URL(), "https://", "http://", 1))
	if code, _, stderr := cliExit(t, plain, "jobs", "--timeout", "10s"); code != 1 || !strings.Contains(stderr, "it is an HTTPS server; give the server's base URL, such as "+c.URL()) {
		t.Errorf("jobs over plain HTTP: exit %d, stderr %q", code, stderr)
	}

	kill9(t, srv)
	srv2 := start(t, "server", "--listen", strings.TrimPrefix(c.URL(), "https://"), "--data", dir, "--tls")
	if got := srv2.waitLog(t, fingerprintRE); got != fp {
		t.Errorf("CA fingerprint after a restart %s, want %s", got, fp)
	}
	if code, _, stderr := cliExit(t, c, "jobs", "--ca-fingerprint", fp); code != 0 {
		t.Errorf("jobs after the restart: exit %d, %s", code, stderr)
	}
}

// TestTLSDefaults: off loopback the server speaks HTTPS unless told
// --insecure-http; --tls-cert serves the operator's certificate.
func TestTLSDefaults(t *testing.T) {
	urlRE := regexp.MustCompile(`msg="server listening" url=(\S+)`)
	dir := t.TempDir()
	srv := start(t, "server", "--listen", "0.0.0.0:0", "--data", dir)
	if u := srv.waitLog(t, urlRE); !strings.HasPrefix(u, "https://") {
		t.Errorf("off loopback: %s, want https://", u)
	}
	insecure := start(t, "server", "--listen", "0.0.0.0:0", "--data", t.TempDir(), "--insecure-http")
	if u := insecure.waitLog(t, urlRE); !strings.HasPrefix(u, "http://") || !strings.Contains(insecure.logText(), "level=WARN msg=\"--insecure-http") {
		t.Errorf("--insecure-http: %s; log:\n%s", u, insecure.logText())
	}

	// The operator's own certificate, from their own CA.
	own := t.TempDir()
	ca, err := pki.LoadOrMakeCA(filepath.Join(own, "ca"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.ServerCert([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(own, "server.pem"), filepath.Join(own, "server-key.pem")
	if err := os.WriteFile(certFile, chain, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	d3 := t.TempDir()
	s3 := start(t, "server", "--listen", "127.0.0.1:0", "--data", d3, "--tls-cert", certFile, "--tls-key", keyFile)
	c3 := connect(t, s3, d3)
	tlsCfg, err := client.TLSConfig(filepath.Join(own, "ca", pki.CAFile), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c3.WithTLS(tlsCfg).Jobs(ctx); err != nil {
		t.Errorf("jobs with the operator's CA: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d3, "tls")); !os.IsNotExist(err) {
		t.Errorf("with --tls-cert the server made a CA of its own anyway (%v)", err)
	}
	out, err := exec.Command(braidBin, "server", "--data", t.TempDir(), "--tls-cert", certFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--tls-cert and --tls-key go together") {
		t.Errorf("--tls-cert alone: %v, %s", err, out)
	}
}

// TestDataPlaneEncrypted: a job's unit crosses a relay that records every
// byte between the server and the worker, as a capture on the path would.
// With data-plane encryption on, no transport puts the unit's input on
// the wire in clear; with it off, tcp, tcpn and sctp do (which shows the
// capture would catch it), and quic still does not.
func TestDataPlaneEncrypted(t *testing.T) {
	marker := []byte("a unit's input that nobody on the path may read; ")
	input := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(input, bytes.Repeat(marker, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"on", "off"} {
		for _, tr := range []string{"sctp", "tcp", "tcpn", "quic"} {
			t.Run(tr+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				srv := start(t, "server", "--listen", "127.0.0.1:0", "--data", dir, "--data-plane-tls", mode)
				c := connect(t, srv, dir)
				var mu sync.Mutex
				var seen bytes.Buffer
				w := startBehindRelay(t, c, func(p []byte) { mu.Lock(); seen.Write(p); mu.Unlock() },
					"--threads", "1", "--name", "w-"+tr, "--transport", tr, "--data-plane-tls", mode)
				id := strings.TrimSpace(cli(t, c, "put", input))
				if code, _, stderr := cliExit(t, c, "submit", "--op", "noop", "--input", id, "--wait", "--timeout", "60s"); code != 0 {
					t.Fatalf("submit: exit %d, %s\nworker log:\n%s", code, stderr, w.logText())
				}
				mu.Lock()
				clear, total := bytes.Contains(seen.Bytes(), marker), seen.Len()
				mu.Unlock()
				if total < len(marker)*2000 {
					t.Fatalf("the relay saw %d bytes: the unit did not cross it", total)
				}
				if want := mode == "off" && tr != "quic"; clear != want {
					t.Errorf("data-plane TLS %s, %s: the input in clear on the wire: %v, want %v", mode, tr, clear, want)
				}
			})
		}
	}
}

// startBehindRelay starts a worker that listens on a free loopback port
// behind a relay whose traffic goes to tap, and waits until it is up.
// Another process may bind the port between its pick and the worker's bind
// (make test runs the packages side by side, some binding hundreds of UDP
// ports): then the worker exits saying so, and it starts again on another.
func startBehindRelay(t *testing.T, c *client.Client, tap func([]byte), args ...string) *proc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		listen := testport.Addr(t)
		r, err := relay.New(listen)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		r.Tap(tap)
		w := start(t, append([]string{"worker", "--server", c.URL(), "--listen", listen, "--advertise", r.Addr()}, args...)...)
		if upOrBindFailed(t, c, w) {
			return w
		}
		if attempt == 3 {
			t.Fatalf("the worker could not bind a free port in %d tries:\n%s", attempt, w.logText())
		}
		t.Logf("another process took %s before the worker bound it: trying another", listen)
		r.Close()
	}
}

// upOrBindFailed waits until a worker is up (true) or w has said that its
// address is in use (false).
func upOrBindFailed(t *testing.T, c *client.Client, w *proc) bool {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if ws, _ := c.Workers(context.Background()); upCount(ws) >= 1 {
			return true
		}
		if strings.Contains(w.logText(), "address already in use") {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no worker up:\n%s", w.logText())
	return false
}
