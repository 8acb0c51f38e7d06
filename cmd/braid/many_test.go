package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops/samples"
)

// photos makes a directory of two images, a hidden file and a
// subdirectory, as a user's folder may hold.
func photos(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "photos")
	for name, b := range map[string][]byte{"img01.png": samples.PNG(), "img02.gif": samples.GIF(), ".DS_Store": []byte("x"), "sub/img03.png": samples.PNG()} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var idLineRE = regexp.MustCompile(`^[0-9a-f]{64}  `)

// put takes several files and directories and prints each id with its
// name; --json maps name to id.
func TestPutManyFilesAndDirectories(t *testing.T) {
	c := startCluster(t, 0)
	url := c.Client.URL()
	dir := photos(t)
	a, b := filepath.Join(dir, "img01.png"), filepath.Join(dir, "img02.gif")

	code, stdout, stderr := runCmd(t, "put", "--server", url, dir)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 2 || !idLineRE.MatchString(lines[0]) || !strings.HasSuffix(lines[0], "  "+a) || !strings.HasSuffix(lines[1], "  "+b) {
		t.Errorf("put DIR: exit %d, stderr %s, stdout:\n%s\nwant a line for each of its files, not the hidden one nor the subdirectory's", code, stderr, stdout)
	}
	code, stdout, _ = runCmd(t, "put", "--server", url, "--json", b, a)
	var ids map[string]string
	if err := json.Unmarshal([]byte(stdout), &ids); code != 0 || err != nil || len(ids) != 2 || len(ids[a]) != 64 || len(ids[b]) != 64 {
		t.Errorf("put --json FILE FILE: exit %d, %v, %s", code, err, stdout)
	}
	if code, stdout, _ := runCmd(t, "put", "--server", url, a); code != 0 || stdout != ids[a]+"\n" {
		t.Errorf("put FILE: exit %d, %q; want the id alone", code, stdout)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{empty}, 1, empty + " has no files to upload"},
		{[]string{a, "-"}, 2, "put - reads standard input alone"},
		{[]string{a, filepath.Join(dir, "nothing.png")}, 1, "no such file or directory"},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"put", "--server", url}, tc.args...)...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("put %q: exit %d, stdout %q, stderr %q; want exit %d, nothing uploaded, and %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
	if objs, err := c.Client.Objects(t.Context()); err != nil || len(objs) != 2 {
		t.Errorf("%d objects stored, %v; want the two images and nothing of the refused puts", len(objs), err)
	}
}

// submit --inputs takes files and directories (uploaded, their names kept),
// and get --job J -o DIR writes each output named after its input, with
// the manifest beside them; a DIR/ that does not exist is made.
func TestInputsByNameAndOutputsIntoDir(t *testing.T) {
	c := startCluster(t, 1)
	url := c.Client.URL()
	dir := photos(t)
	for _, inputs := range [][]string{
		{"--inputs", dir},
		{"--inputs", filepath.Join(dir, "img01.png"), filepath.Join(dir, "img02.gif")}, // photos/*.png as the shell expands it
	} {
		args := append([]string{"submit", "--server", url, "--op", "blur", "--wait"}, inputs...)
		code, stdout, stderr := runCmd(t, args...)
		jobID := strings.TrimSpace(stdout)
		if code != 0 || !regexp.MustCompile(`^j-[0-9a-f]{12}$`).MatchString(jobID) {
			t.Fatalf("braid %q: exit %d, stdout %q, stderr %s", args, code, stdout, stderr)
		}
		out := t.TempDir()
		if len(inputs) > 2 { // -o DIR/ that does not exist yet: made
			out = filepath.Join(out, "blurred") + string(filepath.Separator)
		}
		code, stdout, stderr = runCmd(t, "get", "--server", url, "--job", jobID, "-o", out)
		want := []string{filepath.Join(out, "img01.png"), filepath.Join(out, "img02.gif"), filepath.Join(out, jobID+".json")}
		if code != 0 || stdout != strings.Join(want, "\n")+"\n" {
			t.Errorf("get --job -o DIR: exit %d, stderr %s, stdout:\n%s\nwant:\n%s", code, stderr, stdout, strings.Join(want, "\n"))
		}
		entries, _ := os.ReadDir(out)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"img01.png", "img02.gif", jobID + ".json"}) {
			t.Errorf("%s holds %v", out, names)
		}
		var m api.Manifest
		b, _ := os.ReadFile(filepath.Join(out, jobID+".json"))
		if err := json.Unmarshal(b, &m); err != nil || len(m.Units) != 2 || m.Units[0].Name != "img01.png" || m.Units[1].Name != "img02.gif" {
			t.Errorf("manifest %s: %v", b, err)
		}
	}
	if code, _, stderr := runCmd(t, "submit", "--server", url, "--op", "blur", "--input", "x", "radius=9"); code != 2 || !strings.Contains(stderr, "did you mean --param radius=9?") {
		t.Errorf("a stray argument without --inputs: exit %d, %q", code, stderr)
	}
}

// get --job J -o DIR writes into DIR and nowhere else, whatever a server
// says: a result, an output or a name that is a path is refused
// (security finding 43.8).
func TestGetWritesOnlyIntoDir(t *testing.T) {
	const job = "j-0123456789ab"
	good := strings.Repeat("a", 64)
	names, outputs := strings.Repeat("c", 64), strings.Repeat("d", 64)
	manifest := map[string]api.Manifest{
		names: {Job: job, Op: "blur", Units: []api.ManifestUnit{
			{Index: 0, Input: good, Name: "../../evil.png", Output: good},
			{Index: 1, Input: "../x", Name: "..", Output: good},
		}},
		outputs: {Job: job, Op: "blur", Units: []api.ManifestUnit{{Index: 0, Input: good, Name: "ok.png", Output: "../../../tmp/x"}}},
	}
	var result string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/jobs/"+job:
			_ = json.NewEncoder(w).Encode(api.Job{ID: job, State: api.JobDone, Result: result, Spec: api.JobSpec{Op: "blur", Inputs: []string{good}}})
		case r.URL.Path == "/v1/objects/"+good:
			_, _ = w.Write(samples.PNG())
		case strings.HasPrefix(r.URL.Path, "/v1/objects/"):
			_ = json.NewEncoder(w).Encode(manifest[strings.TrimPrefix(r.URL.Path, "/v1/objects/")])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ result, want string }{
		{"../../x", `the server gave "../../x" as its result, which is not an object id`},
		{outputs, `the manifest gives "../../../tmp/x" as unit 0's output, which is not an object id`},
		{names, ""},
	} {
		result = tc.result
		parent := t.TempDir()
		dir := filepath.Join(parent, "a", "b", "out")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCmd(t, "get", "--server", srv.URL, "--job", job, "-o", dir)
		if tc.want != "" && (code != 1 || !strings.Contains(stderr, tc.want)) {
			t.Errorf("result %q: exit %d, stderr %q; want %q", tc.result, code, stderr, tc.want)
		}
		var outside []string
		_ = filepath.WalkDir(parent, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Dir(path) != dir {
				outside = append(outside, path)
			}
			return nil
		})
		if len(outside) > 0 {
			t.Errorf("result %q: wrote %v outside %s (stdout %q, stderr %q)", tc.result, outside, dir, stdout, stderr)
		}
		if tc.want == "" {
			names, _ := os.ReadDir(dir)
			if code != 0 || len(names) != 3 {
				t.Errorf("result %q: exit %d, stderr %q, %d files in %s; want the two outputs, named after their inputs' ids, and the manifest", tc.result, code, stderr, len(names), dir)
			}
		}
	}
}
