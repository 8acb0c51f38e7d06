package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --secret is refused by every command that takes the cluster secret, with
// exit 2 and a message naming the alternatives, before the command does
// anything; the secret itself is not echoed.
func TestSecretOnCommandLineRefused(t *testing.T) {
	for _, args := range [][]string{
		{"server", "--listen", "127.0.0.1:0", "--data", t.TempDir()},
		{"worker", "--server", "http://127.0.0.1:1"},
		{"workers", "rm", "--server", "http://127.0.0.1:1", "w1"},
		{"bench", "transport", "--connect", "127.0.0.1:1"},
	} {
		args = append(args, "--secret", "hunter2-sekrit")
		code, stdout, stderr := runCmd(t, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "--secret puts the cluster secret on the command line") ||
			!strings.Contains(stderr, "--secret-file FILE") || !strings.Contains(stderr, "$BRAID_SECRET") || strings.Contains(stderr, "hunter2") {
			t.Errorf("braid %s: exit %d, stdout %q, stderr %q; want 2 and the refusal", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// The file and the environment still give the secret; the file wins.
func TestSecretFromFileOrEnvironment(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, env, want string
	}{
		{"", "from-env", "from-env"},
		{file, "from-env", "from-file"},
		{"", "", ""},
	} {
		s := secretFlags{file: tc.file}
		got, err := s.value(&env{getenv: func(k string) string {
			if k == "BRAID_SECRET" {
				return tc.env
			}
			return ""
		}})
		if err != nil || string(got) != tc.want {
			t.Errorf("file %q, env %q: %q, %v; want %q", tc.file, tc.env, got, err, tc.want)
		}
	}
}
