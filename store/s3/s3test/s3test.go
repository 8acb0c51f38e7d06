// Package s3test runs a real S3 server for tests: versitygw, an S3
// gateway over a directory, started on a free loopback port over a
// temporary directory, with a bucket made. mk/versitygw.sh builds the
// binary (make versitygw); Start finds it through $BRAID_VERSITYGW, then
// ~/.cache/braid/bin/versitygw-VERSION, then $PATH, and skips the test
// with a loud message when there is none.
package s3test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/testport"
)

// Version is the versitygw release the project builds (mk/versitygw.sh).
const Version = "v1.8.0"

// Credentials of the gateway's root user.
const (
	AccessKey = "braidtestaccess"
	SecretKey = "braidtestsecret0123456789"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its http://127.0.0.1:PORT URL.
	Endpoint string
	// Root is the directory it serves: Root/BUCKET/KEY is an object.
	Root string
	meta string // versitygw's metadata, beside Root
	bin  string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// Binary returns the path of the versitygw binary, or "" and why not.
func Binary() (string, string) {
	if p := os.Getenv("BRAID_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Sprintf("$BRAID_VERSITYGW=%s: %v", p, err)
		}
		return p, ""
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "braid", "bin", "versitygw-"+Version)
		if _, err := os.Stat(p); err == nil {
			return p, ""
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, ""
	}
	return "", "no versitygw binary: run `make versitygw` (mk/versitygw.sh builds it into ~/.cache/braid/bin)"
}

// Start starts versitygw over a new temporary directory with the given
// buckets made, sets the AWS environment of the test to reach it (and to
// nothing else), and stops it when the test ends.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin, why := Binary()
	if bin == "" {
		t.Skip("SKIPPING S3 TESTS: " + why)
	}
	tmp := t.TempDir()
	root := filepath.Join(tmp, "gw")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		if err := os.Mkdir(filepath.Join(root, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{Root: root, meta: filepath.Join(tmp, "meta"), bin: bin}
	s.start(t, testport.Addr(t)) // Restart starts it there again
	t.Cleanup(s.Stop)
	Env(t, s.Endpoint)
	return s
}

// Env points the AWS environment at endpoint with the gateway's
// credentials, for the rest of the test.
func Env(t testing.TB, endpoint string) {
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
}

func (s *Server) start(t testing.TB, addr string) {
	t.Helper()
	s.addr, s.Endpoint = addr, "http://"+addr
	s.cmd = exec.Command(s.bin, "--access", AccessKey, "--secret", SecretKey, "--port", addr,
		"--quiet", "--health", "/health", "posix", "--sidecar", s.meta, s.Root)
	if err := os.MkdirAll(s.meta, 0o755); err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting versitygw: %v", err)
	}
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	s.waitHealthy(t)
}

// waitHealthy polls the health endpoint until it answers.
func (s *Server) waitHealthy(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			t.Fatalf("versitygw exited at start: %v", s.cmd.ProcessState)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("versitygw on %s not healthy within a minute", s.addr)
}

// Kill kills the server with SIGKILL and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts the server again on the same address and directory
// after Kill.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.start(t, s.addr)
}

// Stop stops the server.
func (s *Server) Stop() {
	select {
	case <-s.done:
	default:
		s.Kill()
	}
}
