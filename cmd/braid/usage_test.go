package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// A mistyped flag or command is one line that names the nearest one and
// where the flags are listed, not the whole usage; exit 2.
func TestTypos(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--wiat"}, "braid submit: unknown flag --wiat (did you mean --wait?); run 'braid submit -h' for its flags\n"},
		{[]string{"get", "-jbo", "j-1"}, "braid get: unknown flag --jbo (did you mean --job?); run 'braid get -h' for its flags\n"},
		{[]string{"jobs", "--frobnicate"}, "braid jobs: unknown flag --frobnicate; run 'braid jobs -h' for its flags\n"},
		{[]string{"submitt"}, "braid: unknown command \"submitt\"; did you mean submit? (braid submit -h shows its flags)\n"},
		{[]string{"frobnicate"}, "braid: unknown command \"frobnicate\"; braid help lists the commands\n"},
		{[]string{"token", "creat"}, "braid token: unknown subcommand \"creat\"; did you mean create? (braid token create -h shows its flags)\n"},
		{[]string{"op", "ad"}, "braid op: unknown subcommand \"ad\"; did you mean add? (braid op add -h shows its flags)\n"},
		{[]string{"status", "--timeout", "soon", "j-1"}, "braid status: invalid value \"soon\" for --timeout: want a duration such as 30s or 10m, or 0 for no limit; run 'braid status -h' for its flags\n"},
		{[]string{"status", "j-1", "--timeout"}, "braid status: --timeout needs a value; run 'braid status -h' for its flags\n"},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != 2 || stdout != "" || stderr != tc.want {
			t.Errorf("braid %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	words := []string{"wait", "input", "inputs", "input-job", "server", "submit", "status"}
	cases := map[string]string{"wiat": "wait", "wat": "wait", "inptu": "input", "inputz": "input", "sever": "server",
		"submitt": "submit", "stauts": "status", "x": "", "input-jbo": "input-job", "zzzzzz": ""}
	for word, want := range cases {
		if got := nearest(word, words); got != want {
			t.Errorf("nearest(%q) = %q, want %q", word, got, want)
		}
	}
}

// The client flags may come before the command.
func TestClientFlagsBeforeCommand(t *testing.T) {
	c := startCluster(t, 0)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	code, stdout, stderr := runCmd(t, "--server", url, "--json", "get", id[:8], "--timeout", "20s")
	if code != 0 || stdout != string(samples.GIF()) {
		t.Errorf("braid --server URL --json get: exit %d, %d bytes, stderr %s", code, len(stdout), stderr)
	}
	if code, stdout, stderr := runCmd(t, "--server="+url, "jobs"); code != 0 || !strings.HasPrefix(stdout, "JOB") {
		t.Errorf("braid --server=URL jobs: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"--op", "blur", "submit"}, {"--server", url}} {
		if code, _, stderr := runCmd(t, args...); code != 2 || !strings.HasPrefix(stderr, "braid: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("braid %s: exit %d, stderr %q; want exit 2 and one line", strings.Join(args, " "), code, stderr)
		}
	}
}

// `braid help COMMAND` is the command's -h, on stdout.
func TestHelpCommand(t *testing.T) {
	for _, name := range []string{"submit", "workers", "op", "token", "wait"} {
		code, stdout, stderr := runCmd(t, "help", name)
		_, _, want := runCmd(t, name, "-h")
		if code != 0 || stderr != "" || stdout != want || !strings.Contains(stdout, "Usage: braid "+name) {
			t.Errorf("braid help %s: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", name, code, stderr, stdout, want)
		}
	}
	if code, _, stderr := runCmd(t, "help", "sbmit"); code != 2 || !strings.Contains(stderr, "did you mean submit?") {
		t.Errorf("braid help sbmit: exit %d, stderr %q", code, stderr)
	}
}

// Help texts: workers -h names rm, every usage line starts "Usage:", and
// braid help's footer names --token.
func TestHelpTextsComplete(t *testing.T) {
	if _, _, stderr := runCmd(t, "workers", "-h"); !strings.Contains(stderr, "braid workers rm NAME...") {
		t.Errorf("workers -h does not name rm:\n%s", stderr)
	}
	if _, stdout, _ := runCmd(t, "help"); !strings.Contains(stdout, "--token T") {
		t.Errorf("braid help's footer does not name --token:\n%s", stdout)
	}
	for _, args := range [][]string{{"op"}, {"token"}, {"workers", "rm"}, {"submit"}, {"net", "-h"}, {"bench", "-h"}} {
		_, stdout, stderr := runCmd(t, args...)
		text := stdout + stderr
		if strings.Contains(text, "usage:") || !strings.Contains(text, "Usage: braid ") {
			t.Errorf("braid %s: want a capitalised Usage: line:\n%s", strings.Join(args, " "), text)
		}
	}
}

// Every bad usage exits 2, checked before the server is asked where it
// can be, and the server's refusal of a parameter too.
func TestBadUsageExitsTwo(t *testing.T) {
	url := closedURL(t)
	id := strings.Repeat("a", 64)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--op", "blur", "--input", id, "--tiles", "3"}, `--tiles "3": want RxC with R and C between 1 and 64`},
		{[]string{"submit", "--op", "blur", "--input", id, "--tiles", "65x1"}, `--tiles "65x1"`},
		{[]string{"submit", "--op", "blur", "--input", id, "--tiles", "2x2", "--repeat", "3"}, "give --repeat or --tiles, not both"},
		{[]string{"submit", "--op", "blur", "--input", id, "--policy", "fastest"}, `--policy "fastest": want`},
		{[]string{"token", "create", "--role", "root"}, `--role "root": want admin, submit or read`},
		{[]string{"workers", "rm", "w1"}, "removing a worker needs the cluster secret"},
	}
	for _, tc := range cases {
		tc.args = append(tc.args, "--server", url, "--timeout", "1s")
		code, _, stderr := runCmd(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "no braid server") {
			t.Errorf("braid %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if code, _, stderr := runCmdEnv(t, map[string]string{"BRAID_SECRET": "s"}, "worker", "--threads", "0", "--server", url); code != 2 || !strings.Contains(stderr, "--threads 0") {
		t.Errorf("worker --threads 0: exit %d, stderr %q", code, stderr)
	}

	c := startCluster(t, 0)
	id = putSample(t, c.Client.URL(), samples.GIF())
	for _, args := range [][]string{
		{"--op", "blur", "--input", id, "--param", "sigma=1000"},
		{"--op", "blurr", "--input", id},
	} {
		code, _, stderr := runCmd(t, append([]string{"submit", "--server", c.Client.URL()}, args...)...)
		if code != 2 {
			t.Errorf("braid submit %s: exit %d, stderr %q; want 2", strings.Join(args, " "), code, stderr)
		}
	}
}

// An empty --input is named as such, whether it was given as "" or left
// empty by a variable, so that the flag after it is not taken for its
// value.
func TestEmptyInput(t *testing.T) {
	url := closedURL(t)
	cases := [][]string{
		{"submit", "--op", "blur", "--input", "", "--repeat", "100"},
		{"submit", "--op", "blur", "--input", "--repeat", "100"},
		{"submit", "--op", "blur", "--repeat", "100", "--input"},
	}
	for _, args := range cases {
		code, _, stderr := runCmd(t, append(args, "--server", url, "--timeout", "1s")...)
		if code != 2 || !strings.Contains(stderr, "--input is empty") && !strings.Contains(stderr, "--input needs a value") {
			t.Errorf("braid %q: exit %d, stderr %q; want exit 2 and --input is empty", args, code, stderr)
		}
	}
}

// A call refused for want of a token, made where a server wrote its first
// admin token (its default --data), says where that token is.
func TestNoTokenPointsToLocalAdminToken(t *testing.T) {
	dir := t.TempDir()
	cl, err := cluster.Start(t.Context(), cluster.Config{DataDir: filepath.Join(dir, "braid-data"), Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	t.Chdir(dir)
	code, _, stderr := runCmd(t, "jobs", "--server", cl.Client.URL())
	want := "braid-data/admin.token is here: if its server is the one at --server, export BRAID_TOKEN=$(cat braid-data/admin.token)"
	if code != 1 || !strings.Contains(stderr, "this server needs a token") || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
	}
	if err := os.Remove(filepath.Join(dir, "braid-data", "admin.token")); err != nil {
		t.Fatal(err)
	}
	if _, _, stderr := runCmd(t, "jobs", "--server", cl.Client.URL()); strings.Contains(stderr, "is here") {
		t.Errorf("no admin.token here, yet: %q", stderr)
	}
}
