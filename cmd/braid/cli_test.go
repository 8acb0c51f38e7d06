package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/version"
)

// startCluster starts a real server with workers one-thread workers on
// loopback and returns its URL.
func startCluster(t *testing.T, workers int) *cluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := cluster.Config{Logger: slog.New(slog.DiscardHandler)}
	for i := range workers {
		cfg.Workers = append(cfg.Workers, cluster.WorkerSpec{Name: "w" + string(rune('1'+i)), Threads: 1, Transport: "tcpn"})
	}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// putSample uploads b and returns its id.
func putSample(t *testing.T, url string, b []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "put", "--server", url, f)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	return strings.TrimSpace(stdout)
}

// Every command refuses an argument it does not take, names it, and does
// not go to the server (which is not there: the error comes first).
func TestStrayArgumentsAreErrors(t *testing.T) {
	url := closedURL(t)
	id := strings.Repeat("a", 64)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--op", "blur", "--input", id, "--param", "sigma=2", "radius=9"},
			`unexpected argument "radius=9" (did you mean --param radius=9?)`},
		{[]string{"submit", "--op", "blur", "--input", id, "--param", "sigma=2", "--param", "sigma=3"},
			"--param sigma given twice (sigma=2 and sigma=3)"},
		{[]string{"submit", "--op", "blur", "--input", id, "--repeat", "0"}, "--repeat 0: want 1 to 10000000"},
		{[]string{"get", id, "extra", "-o", "x"}, `unexpected argument "extra"`},
		{[]string{"status", "j-1", "j-2"}, `unexpected argument "j-2"`},
		{[]string{"jobs", "all"}, `unexpected argument "all"`},
		{[]string{"ops", "blur"}, `unexpected argument "blur"`},
		{[]string{"version", "now"}, `unexpected argument "now"`},
		{[]string{"worker", "w1"}, `unexpected argument "w1"`},
	}
	for _, tc := range cases {
		if name := tc.args[0]; name != "version" && name != "worker" {
			tc.args = append(tc.args, "--server", url, "--timeout", "1s")
		}
		code, _, stderr := runCmd(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "no braid server") {
			t.Errorf("braid %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// `braid` alone is a usage error; `braid help` is not.
func TestNoArgumentsIsUsage(t *testing.T) {
	code, stdout, stderr := runCmd(t)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "Usage: braid COMMAND") {
		t.Errorf("braid: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, _ := runCmd(t, "help"); code != 0 || !strings.Contains(stdout, "Usage: braid COMMAND") {
		t.Errorf("braid help: exit %d, stdout %q", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		code, stdout, _ := runCmd(t, arg)
		if want := "braid " + version.String() + "\n"; code != 0 || stdout != want {
			t.Errorf("braid %s: exit %d, %q; want %q", arg, code, stdout, want)
		}
	}
}

// Ids print in full and are accepted by any unique prefix.
func TestIDsInFullAndByPrefix(t *testing.T) {
	c := startCluster(t, 1)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	code, jobID, stderr := runCmd(t, "submit", "--server", url, "--op", "blur", "--input", id[:6], "--wait")
	jobID = strings.TrimSpace(jobID)
	if code != 0 || !regexp.MustCompile(`^j-[0-9a-f]{12}$`).MatchString(jobID) {
		t.Fatalf("submit by prefix: exit %d, stdout %q, stderr %s", code, jobID, stderr)
	}
	code, stdout, _ := runCmd(t, "status", "--server", url, jobID[2:7])
	if code != 0 || !strings.Contains(stdout, "job           "+jobID) || !strings.Contains(stdout, " on "+id+"\n") {
		t.Errorf("status by prefix: exit %d, want the job and its full input id:\n%s", code, stdout)
	}
	code, stdout, stderr = runCmd(t, "status", "--server", url, jobID[2:])
	if code != 0 || !strings.Contains(stdout, "job           "+jobID) {
		t.Errorf("status by the full id without j-: exit %d, stderr %s\n%s", code, stderr, stdout)
	}
	code, stdout, _ = runCmd(t, "get", "--server", url, id[:10])
	if code != 0 || stdout != string(samples.GIF()) {
		t.Errorf("get by prefix: exit %d, %d bytes", code, len(stdout))
	}
	if code, _, stderr := runCmd(t, "get", "--server", url, "ffff0000"); code != 1 || !strings.Contains(stderr, "no object matches prefix ffff0000") {
		t.Errorf("get of an unknown prefix: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "wait", "--server", url, "j-fff"); code != 1 || !strings.Contains(stderr, "no job matches prefix j-fff") {
		t.Errorf("wait of an unknown prefix: exit %d, %s", code, stderr)
	}
}

func TestUniquePrefix(t *testing.T) {
	ids := []string{"abc1", "abc2", "abd3", "b1", "b2", "b3", "b4", "b5", "b6"}
	cases := []struct{ prefix, id, err string }{
		{"abd", "abd3", ""},
		{"abc", "", "prefix abc is ambiguous: abc1, abc2"},
		{"b", "", "prefix b is ambiguous: b1, b2, b3, b4, b5 and 1 more objects"},
		{"c", "", "no object matches prefix c"},
	}
	for _, tc := range cases {
		id, err := unique("object", tc.prefix, tc.prefix, ids)
		if id != tc.id || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("unique(%q) = %q, %v; want %q, %q", tc.prefix, id, err, tc.id, tc.err)
		}
	}
}

// `JOB=$(braid submit ... --wait)` gets the id: the summary is on stderr.
// A job's units are counted in words that agree ("1 unit").
func TestSubmitWaitPrintsIDOnStdout(t *testing.T) {
	c := startCluster(t, 1)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	code, stdout, stderr := runCmd(t, "submit", "--server", url, "--op", "blur", "--input", id, "--wait")
	if code != 0 || !regexp.MustCompile(`^j-[0-9a-f]{12}\n$`).MatchString(stdout) {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "state         done") || !regexp.MustCompile(`worker w1 +1 unit\n`).MatchString(stderr) {
		t.Errorf("stderr lacks the summary:\n%s", stderr)
	}
}

// A job that ends cancelled without a reason is said without a dangling
// colon.
func TestWaitCancelledJob(t *testing.T) {
	c := startCluster(t, 0)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	_, jobID, _ := runCmd(t, "submit", "--server", url, "--op", "blur", "--input", id)
	jobID = strings.TrimSpace(jobID)
	if code, _, stderr := runCmd(t, "cancel", "--server", url, jobID); code != 0 {
		t.Fatalf("cancel: exit %d, %s", code, stderr)
	}
	code, _, stderr := runCmd(t, "wait", "--server", url, jobID)
	if want := "braid wait: job " + jobID + " cancelled\n"; code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("exit %d, stderr %q; want it to end %q", code, stderr, want)
	}
	code, _, stderr = runCmd(t, "get", "--server", url, "--job", jobID, "-o", filepath.Join(t.TempDir(), "out"))
	if want := "job " + jobID + " was cancelled; it has no result\n"; code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("get --job: exit %d, stderr %q; want it to end %q", code, stderr, want)
	}
}

// `braid ops` shows each parameter's type, default and doc, which gives
// its range.
func TestOpsShowsParameters(t *testing.T) {
	c := startCluster(t, 0)
	code, stdout, _ := runCmd(t, "ops", "--server", c.Client.URL())
	if code != 0 || !regexp.MustCompile(`--param sigma=FLOAT +default 2 +standard deviation in pixels, in \(0, 64\]`).MatchString(stdout) ||
		!regexp.MustCompile(`--param format=STRING +output encoding: "png", "jpeg" or "gif"`).MatchString(stdout) {
		t.Errorf("exit %d, ops:\n%s", code, stdout)
	}
}

// The flags' help names their arguments and limits; no back-quoted word
// turns into a bogus argument name.
func TestHelpTexts(t *testing.T) {
	cases := map[string][]string{
		"submit": {"-input ID", "-op OP", "-param key=value", "-repeat N", "1 to 10000000", "-tiles RxC", "1 to 64", "-speculate"},
		"put":    {"braid put -", "1 GiB"},
		"get":    {"-o FILE", "-job JOB"},
	}
	for name, wants := range cases {
		code, _, stderr := runCmd(t, name, "-h")
		if code != 0 || strings.Contains(stderr, "-input braid") || strings.Contains(stderr, "-op braid") {
			t.Errorf("%s -h: exit %d:\n%s", name, code, stderr)
		}
		for _, want := range wants {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s -h lacks %q:\n%s", name, want, stderr)
			}
		}
	}
}

// put - reads standard input; put of a directory without files is refused
// before the server is asked.
func TestPutStdinAndDirectory(t *testing.T) {
	c := startCluster(t, 0)
	var stdout, stderr bytes.Buffer
	e := &env{stdin: bytes.NewReader(samples.PNG()), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	sum := sha256.Sum256(samples.PNG())
	if code := run(context.Background(), []string{"put", "--server", c.Client.URL(), "-"}, e); code != 0 ||
		stdout.String() != hex.EncodeToString(sum[:])+"\n" {
		t.Errorf("put -: exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	dir := t.TempDir()
	code, _, errText := runCmd(t, "put", "--server", closedURL(t), "--timeout", "1s", dir)
	if code != 1 || errText != "braid put: "+dir+" has no files to upload (subdirectories and hidden files are left out)\n" {
		t.Errorf("put DIR: exit %d, stderr %q", code, errText)
	}
}

// put says when the bytes were already stored, and --json passes the
// server's field on.
func TestPutAlreadyStored(t *testing.T) {
	created := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = json.NewEncoder(w).Encode(api.Object{ID: strings.Repeat("a", 64), Size: 3, Created: created, Existing: true})
	}))
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "put", "--server", srv.URL, f)
	want := "braid put: already stored (since " + created.Local().Format("2006-01-02 15:04:05") + ")\n"
	if code != 0 || stdout != strings.Repeat("a", 64)+"\n" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runCmd(t, "put", "--json", "--server", srv.URL, f)
	var o api.Object
	if err := json.Unmarshal([]byte(stdout), &o); code != 0 || err != nil || !o.Existing || !o.Created.Equal(created) {
		t.Errorf("put --json: exit %d, %v, %s", code, err, stdout)
	}
}

// get -o writes into a device or FIFO as it is, never replacing it with a
// regular file, and through a symbolic link into the file it names.
func TestGetToSpecialFiles(t *testing.T) {
	c := startCluster(t, 0)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // opening blocks until get opens the other end
		read <- b
	}()
	if code, _, stderr := runCmd(t, "get", "--server", url, id, "-o", fifo); code != 0 {
		t.Errorf("-o FIFO: exit %d, %s", code, stderr)
	}
	select {
	case b := <-read:
		if !bytes.Equal(b, samples.GIF()) {
			t.Errorf("read %d bytes from the FIFO, want the object's %d", len(b), len(samples.GIF()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing read from the FIFO")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was replaced: %v, %v", fi.Mode(), err)
	}

	// Only now that a FIFO is known to be written as it is: run as root, a
	// get that renamed onto /dev/null would replace the machine's.
	if code, _, stderr := runCmd(t, "get", "--server", url, id, "-o", os.DevNull); code != 0 {
		t.Errorf("-o %s: exit %d, %s", os.DevNull, code, stderr)
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v, %v", os.DevNull, fi.Mode(), err)
	}

	target := filepath.Join(dir, "target.gif")
	link := filepath.Join(dir, "link.gif")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o604); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target.gif", link); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCmd(t, "get", "--server", url, id, "-o", link); code != 0 || stdout != "" {
		t.Errorf("-o LINK: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if dest, err := os.Readlink(link); err != nil || dest != "target.gif" {
		t.Errorf("the link was replaced: %q, %v", dest, err)
	}
	b, err := os.ReadFile(target)
	if fi, serr := os.Stat(target); err != nil || serr != nil || !bytes.Equal(b, samples.GIF()) || fi.Mode().Perm() != 0o604 {
		t.Errorf("the link's target: %d bytes, %v, %v; want the object, mode 0604 kept", len(b), err, serr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d files in %s, want 3 and no temporary file left", len(entries), dir)
	}
}

// get -o FILE makes a file as os.Create does (0666 less the umask) and
// keeps an existing file's mode; get -o DIR writes into the directory.
func TestGetToFile(t *testing.T) {
	c := startCluster(t, 0)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	mode := func(path string) os.FileMode {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}

	newFile := filepath.Join(dir, "new.gif")
	if code, _, stderr := runCmd(t, "get", "--server", url, id, "-o", newFile); code != 0 || mode(newFile) != 0o640 {
		t.Errorf("new file: exit %d (%s), mode %v, want 0640", code, stderr, mode(newFile))
	}
	existing := filepath.Join(dir, "existing.gif")
	if err := os.WriteFile(existing, nil, 0o604); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o604); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCmd(t, "get", "--server", url, id, "-o", existing); code != 0 || mode(existing) != 0o604 {
		t.Errorf("existing file: exit %d, mode %v, want 0604 kept", code, mode(existing))
	}
	code, stdout, stderr := runCmd(t, "get", "--server", url, id, "-o", dir)
	into := filepath.Join(dir, id+".gif")
	if b, err := os.ReadFile(into); code != 0 || err != nil || !bytes.Equal(b, samples.GIF()) || stdout != into+"\n" {
		t.Errorf("-o DIR: exit %d, stdout %q, %v, stderr %s", code, stdout, err, stderr)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("%d files in %s, want 3 and no temporary file left", len(entries), dir)
	}
}
