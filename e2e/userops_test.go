package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop/wasmtest"
)

// opCLI runs `braid op SUB ARGS...` against c's server with the admin
// token and returns its exit code and output.
func opCLI(t *testing.T, c *client.Client, sub string, args ...string) (int, string, string) {
	t.Helper()
	return cliExit(t, c, append([]string{"op", sub}, args...)...)
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUserOps registers user operations with the CLI and runs them on a
// worker process: a word count gives the right answer, while modules that
// loop forever, trap, allocate past their cap and write past their output
// limit each fail their own job with a reason, and the worker serves the
// word count throughout. A restarted worker runs the operation again from
// its compiled-code cache, compiling nothing.
func TestUserOps(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "wasm-cache")
	_, c := startServer(t)
	workerArgs := []string{"worker", "--server", c.URL(), "--threads", "2", "--name", "w1", "--transport", "tcp",
		"--wasm-cache", cache, "--drain-timeout", "2s", "--allow-exec", "sh"}
	python := ""
	if _, err := os.Stat("/usr/bin/python3"); err == nil { // not a pyenv shim in /root: scripts run as nobody under root
		python = "python3=/usr/bin/python3"
		workerArgs[len(workerArgs)-1] += "," + python
	}
	w := start(t, workerArgs...)
	waitWorkersUp(t, c, 1)

	wc := writeFile(t, dir, "wc.wasm", wasmtest.Build(t, "./examples/ops/wordcount", false))
	code, stdout, stderr := opCLI(t, c, "add", "wordcount", "--wasm", wc, "--param", "lower:bool=false", "--param", "top:int=0@0..", "--summary", "count words")
	if code != 0 || !strings.HasPrefix(stdout, "wordcount version 1 ") {
		t.Fatalf("op add: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if ops := cli(t, c, "ops"); !regexp.MustCompile(`wordcount\s+count words \[user op v1, command`).MatchString(ops) {
		t.Fatalf("braid ops does not list the user operation:\n%s", ops)
	}
	register := func(name string, module []byte, args ...string) {
		p := writeFile(t, dir, name+".wasm", module)
		kind := []string{"--wasm", p}
		if strings.HasSuffix(name, "-sh") {
			kind = []string{"--exec", p, "--interpreter", "sh"}
		}
		if code, _, stderr := opCLI(t, c, "add", append(append([]string{name}, kind...), args...)...); code != 0 {
			t.Fatalf("op add %s: %s", name, stderr)
		}
	}
	register("spin", wasmtest.Module(wasmtest.Loop...), "--unit-timeout", "1s")
	register("trap", wasmtest.Module(wasmtest.Trap...))
	register("hostile", wasmtest.Build(t, "./userop/testdata/hostile", false), "--param", "mode:string", "--memory", "32", "--max-output", "100000")
	register("spin-sh", []byte("while :; do :; done\n"), "--unit-timeout", "1s")
	text := writeFile(t, dir, "a.txt", []byte("The cat saw the dog.\nthe END, the end"))
	if code, _, stderr := opCLI(t, c, "add", "bad", "--wasm", text); code != 1 || !strings.Contains(stderr, "bad_module: not a WebAssembly module") {
		t.Errorf("op add of a text file: exit %d, stderr %q", code, stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	in := strings.TrimSpace(cli(t, c, "put", text))
	submit := func(spec api.JobSpec) string {
		spec.Input = in
		j, err := c.Submit(ctx, spec)
		if err != nil {
			t.Fatalf("submit %+v: %v", spec, err)
		}
		return j.ID
	}
	hostile := map[string]string{
		submit(api.JobSpec{Op: "spin", Repeat: 2}):                                     "ran past its time limit of 1s",
		submit(api.JobSpec{Op: "trap"}):                                                "the module trapped: wasm error: unreachable",
		submit(api.JobSpec{Op: "hostile", Params: map[string]string{"mode": "alloc"}}): "memory limit is 32 MiB",
		submit(api.JobSpec{Op: "hostile", Params: map[string]string{"mode": "spew"}}):  "output passed its limit of 100000 bytes",
		submit(api.JobSpec{Op: "hostile", Params: map[string]string{"mode": "panic"}}): "panic: deliberate",
		submit(api.JobSpec{Op: "spin", UnitTimeoutMS: 300}):                            "ran past its time limit of 300ms",
	}
	counts := submit(api.JobSpec{Op: "wordcount", Params: map[string]string{"lower": "true"}, Repeat: 6})
	for id, want := range hostile {
		j, err := c.Wait(ctx, id, nil)
		if err != nil || j.State != api.JobFailed || !strings.Contains(j.Error, want) {
			t.Errorf("job %s (%s): state %s, error %q, %v; want failed saying %q", id, j.Spec.Op, j.State, j.Error, err, want)
		}
	}
	j, err := c.Wait(ctx, counts, nil)
	if err != nil || j.State != api.JobDone || j.Progress.Done != 6 {
		t.Fatalf("word count beside the hostile jobs: %+v, %v", j, err)
	}
	single := submit(api.JobSpec{Op: "wordcount", Params: map[string]string{"lower": "true", "top": "2"}})
	if j, err = c.Wait(ctx, single, nil); err != nil || j.State != api.JobDone {
		t.Fatalf("%+v, %v", j, err)
	}
	if out, err := c.GetBytes(ctx, j.Result); err != nil || string(out) != "4 the\n2 end\n" {
		t.Fatalf("word count result %q, %v", out, err)
	}

	if python != "" { // the same word count as a Python script
		py := filepath.Join(wasmtest.Root(t), "examples/ops/wordcount-py/wordcount.py")
		if code, stdout, stderr := opCLI(t, c, "add", "wordcount-py", "--exec", py, "--interpreter", "python3",
			"--param", "lower:bool=false", "--param", "top:int=0@0.."); code != 0 || !strings.Contains(stdout, "run by python3") {
			t.Fatalf("op add --exec: %d %q %q", code, stdout, stderr)
		}
		j, err := c.Wait(ctx, submit(api.JobSpec{Op: "wordcount-py", Params: map[string]string{"lower": "true", "top": "2"}}), nil)
		if err != nil || j.State != api.JobDone {
			t.Fatalf("python word count: %+v, %v", j, err)
		}
		if out, err := c.GetBytes(ctx, j.Result); err != nil || string(out) != "4 the\n2 end\n" {
			t.Fatalf("python word count result %q, %v", out, err)
		}
	}

	// One unit per object: a few named on the command line, or a list.
	other := strings.TrimSpace(cli(t, c, "put", writeFile(t, dir, "b.txt", []byte("b b a"))))
	list := writeFile(t, dir, "ids.txt", []byte("# inputs\n"+in+"\n"+other+"\n"))
	last := ""
	for _, args := range [][]string{{"--inputs", in[:12] + "," + other}, {"--input-list", list}} {
		out := cli(t, c, append([]string{"submit", "--op", "wordcount", "--wait", "--json"}, args...)...)
		var j api.Job
		if err := json.Unmarshal([]byte(out), &j); err != nil || j.State != api.JobDone || j.Progress.Done != 2 {
			t.Fatalf("submit %v: %v\n%s", args, err, out)
		}
		var m api.Manifest
		if b, err := c.GetBytes(ctx, j.Result); err != nil || json.Unmarshal(b, &m) != nil || len(m.Units) != 2 || m.Units[1].Input != other {
			t.Fatalf("manifest of %v: %s, %v", args, b, err)
		}
		if b, _ := c.GetBytes(ctx, m.Units[1].Output); string(b) != "2 b\n1 a\n" {
			t.Fatalf("second unit's output %q", b)
		}
		last = j.ID
	}
	// One unit per output of another job: counting the counts.
	out := cli(t, c, "submit", "--op", "wordcount", "--input-job", last, "--wait", "--json")
	var jj api.Job
	if err := json.Unmarshal([]byte(out), &jj); err != nil || jj.State != api.JobDone || jj.Progress.Done != 2 {
		t.Fatalf("submit --input-job: %v\n%s", err, out)
	}

	// A tiled pipeline from the command line.
	img := strings.TrimSpace(cli(t, c, "put", writeFile(t, dir, "in.gif", samples.GIF())))
	out = cli(t, c, "submit", "--op", "blur,sobel", "--param", "blur.sigma=2", "--input", img, "--tiles", "2x2", "--wait", "--json")
	if err := json.Unmarshal([]byte(out), &jj); err != nil || jj.State != api.JobDone || jj.Progress.Done != 4 {
		t.Fatalf("a tiled pipeline: %v\n%s", err, out)
	}

	// The worker restarts: the compiled code on disk is used as it is.
	before := snapshot(t, cache)
	if len(before) == 0 {
		t.Fatal("the worker left no compiled code in its --wasm-cache")
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	_ = w.cmd.Wait()
	w = start(t, workerArgs...)
	waitWorkersUp(t, c, 1)
	again := submit(api.JobSpec{Op: "wordcount"})
	if j, err = c.Wait(ctx, again, nil); err != nil || j.State != api.JobDone {
		t.Fatalf("after the restart: %+v, %v", j, err)
	}
	if after := snapshot(t, cache); !equalSnapshots(before, after) {
		t.Errorf("the restarted worker wrote its cache anew:\nbefore %v\nafter  %v", before, after)
	}
	t.Logf("worker log after the restart:\n%s", grepLines(w.logText(), "module ready"))
}

// snapshot maps each file under dir to its size and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			out[p] = fmt.Sprint(info.Size(), " ", info.ModTime())
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func equalSnapshots(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
