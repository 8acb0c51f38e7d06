package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/pki"
)

// runEnvCmd runs a command with the environment vars (nothing else).
func runEnvCmd(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] }})
	return code, stdout.String(), stderr.String()
}

// TestTokenCommands: an admin makes, lists and revokes tokens with the
// CLI; a revoked token and no token are refused with a message that says
// what to do; the configuration file supplies the server and the token.
func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	url := cl.Client.URL()
	adminTok, err := os.ReadFile(filepath.Join(dir, api.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := map[string]string{"BRAID_SERVER": url, "BRAID_TOKEN": strings.TrimSpace(string(adminTok))}

	code, _, stderr := runEnvCmd(t, map[string]string{"BRAID_SERVER": url}, "jobs")
	if code != 1 || !strings.Contains(stderr, "unauthorized: this server needs a token: pass --token, set $BRAID_TOKEN") {
		t.Errorf("jobs without a token: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runEnvCmd(t, admin, "token", "create", "--name", "ci")
	if code != 2 || !strings.Contains(stderr, "--role is required") {
		t.Errorf("create without --role: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runEnvCmd(t, admin, "token", "create", "--role", "read", "--expires", "soon")
	if code != 2 || !strings.Contains(stderr, `--expires "soon"`) {
		t.Errorf("create with a bad --expires: exit %d, stderr %q", code, stderr)
	}

	code, stdout, stderr := runEnvCmd(t, admin, "token", "create", "--role", "submit", "--name", "ci", "--expires", "30d")
	tok := strings.TrimSpace(stdout)
	if code != 0 || !strings.HasPrefix(tok, "braid_") || strings.Count(stdout, "\n") != 1 || !strings.Contains(stderr, "role submit, expires ") {
		t.Fatalf("token create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	id := strings.Split(tok, "_")[1]
	ci := map[string]string{"BRAID_SERVER": url, "BRAID_TOKEN": tok}
	if code, _, stderr := runEnvCmd(t, ci, "jobs"); code != 0 {
		t.Errorf("jobs with the new token: exit %d, %s", code, stderr)
	}
	in, err := cl.Client.Put(ctx, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runEnvCmd(t, ci, "submit", "--op", "noop", "--input", in.ID)
	if code != 0 {
		t.Fatalf("submit with the new token: exit %d, %s", code, stderr)
	}
	if code, out, _ := runEnvCmd(t, ci, "status", strings.TrimSpace(stdout)); code != 0 || !regexp.MustCompile(`\nowner +token `+id+`\n`).MatchString(out) {
		t.Errorf("status of the token's job: exit %d:\n%s", code, out)
	}
	if code, _, stderr := runEnvCmd(t, ci, "token", "list"); code != 1 || !strings.Contains(stderr, "forbidden: this needs a token with role admin") {
		t.Errorf("token list with a submit token: exit %d, stderr %q", code, stderr)
	}

	code, stdout, _ = runEnvCmd(t, admin, "token", "list", "--json")
	var list []api.Token
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil || len(list) != 2 {
		t.Fatalf("token list --json: exit %d, %v: %s", code, err, stdout)
	}
	code, stdout, _ = runEnvCmd(t, admin, "token", "list")
	if code != 0 || !strings.Contains(stdout, id+"  submit  ci") || strings.Contains(stdout, tok) {
		t.Errorf("token list:\n%s", stdout)
	}

	// The configuration file, with the flag winning over it.
	home := t.TempDir()
	cfgPath := filepath.Join(home, ".config", "braid", "config")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte("# braid\nserver = "+url+"\ntoken = "+tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runEnvCmd(t, map[string]string{"HOME": home}, "jobs"); code != 0 {
		t.Errorf("jobs with the configuration file: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runEnvCmd(t, map[string]string{"HOME": home}, "jobs", "--token", "braid_000000000000_0"); code != 1 || !strings.Contains(stderr, "not known here") {
		t.Errorf("--token over the configuration file: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := runEnvCmd(t, map[string]string{"HOME": home}, "token", "create", "--help"); strings.Contains(stdout+stderr, tok) || code != 0 {
		t.Errorf("--help shows the configured token, or fails (exit %d)", code)
	}

	code, stdout, stderr = runEnvCmd(t, admin, "token", "revoke", id, "nosuchtoken")
	if code != 1 || stdout != "revoked token "+id+"\n" || !strings.Contains(stderr, `nosuchtoken: no token "nosuchtoken"`) {
		t.Errorf("token revoke: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runEnvCmd(t, map[string]string{"HOME": home}, "jobs"); code != 1 || !strings.Contains(stderr, "token "+id+" is not known here") {
		t.Errorf("jobs with a revoked token: exit %d, stderr %q", code, stderr)
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"server http://x\n", "line 1: want key = value"},
		{"# c\n\nproxy = http://p:3128\n", `line 3: unknown key "proxy"`},
		{"token =\n", "line 1: want key = value"},
	} {
		if _, err := parseConfig([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseConfig(%q): %v, want %q", tc.text, err, tc.want)
		}
	}
	cfg, err := parseConfig([]byte(" server = http://h:1 \n token=braid_x \nca = /etc/braid/ca.pem\nca-fingerprint = sha256:ab\n"))
	if err != nil || cfg.server != "http://h:1" || cfg.token != "braid_x" || cfg.ca != "/etc/braid/ca.pem" || cfg.caFP != "sha256:ab" {
		t.Errorf("parseConfig: %+v, %v", cfg, err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	code, _, stderr := runEnvCmd(t, map[string]string{"BRAID_CONFIG": missing}, "jobs")
	if code != 1 || !strings.Contains(stderr, "configuration file") {
		t.Errorf("a missing $BRAID_CONFIG: exit %d, stderr %q", code, stderr)
	}
}

// FuzzParseConfig: any configuration file is read or refused with a line
// number, never a panic.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("server = http://h:1\ntoken = braid_x\n"))
	f.Add([]byte("# only a comment\n\n"))
	f.Add([]byte("=\n==\nserver==x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := parseConfig(b)
		if err != nil && !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "token too long") {
			t.Errorf("error without a line: %v", err)
		}
		if err == nil && (strings.ContainsAny(cfg.server, "\n") || strings.ContainsAny(cfg.token, "\n")) {
			t.Errorf("a value spans lines: %+v", cfg)
		}
	})
}

// The configuration file's token goes only to the file's server; a flag
// or $BRAID_TOKEN goes anywhere, and wins.
func TestTokenFor(t *testing.T) {
	for _, tc := range []struct {
		c    clientFlags
		want string
	}{
		{clientFlags{server: "http://a:1", cfgServer: "http://a:1/", cfgToken: "file"}, "file"},
		{clientFlags{server: "http://b:1", cfgServer: "http://a:1", cfgToken: "file"}, ""},
		{clientFlags{server: "http://b:1", cfgToken: "file"}, "file"},
		{clientFlags{server: "http://b:1", cfgServer: "http://a:1", cfgToken: "file", envToken: "env"}, "env"},
		{clientFlags{server: "http://b:1", token: "flag", envToken: "env"}, "flag"},
	} {
		if got := tc.c.tokenFor(); got != tc.want {
			t.Errorf("%+v: token %q, want %q", tc.c, got, tc.want)
		}
	}
}

// TestTrustFlagsWinOverEnvironment: --ca given on the command line is not
// overridden by a fingerprint from $BRAID_CA_FINGERPRINT or the
// configuration file (it was: with both set, the pin decided).
func TestTrustFlagsWinOverEnvironment(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrMakeCA(filepath.Join(dir, "ca"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.LoadOrMakeCA(filepath.Join(dir, "other"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.ServerCert([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "[]")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	env := map[string]string{"BRAID_SERVER": srv.URL, "BRAID_CA_FINGERPRINT": other.Fingerprint()}
	if code, _, stderr := runEnvCmd(t, env, "jobs", "--timeout", "5s"); code != 1 || !strings.Contains(stderr, "is not trusted") {
		t.Errorf("with only another CA's fingerprint in the environment: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runEnvCmd(t, env, "jobs", "--ca", filepath.Join(dir, "ca", pki.CAFile)); code != 0 {
		t.Errorf("--ca beside another CA's fingerprint in the environment: exit %d, stderr %q", code, stderr)
	}
}
