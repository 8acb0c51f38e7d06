package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop/wasmtest"
)

// css is a CSS selector (chromedp.CSS: DOM.querySelector).
type css = chromedp.CSS

// TestDashboard drives the web dashboard in headless Chromium against a
// live cluster. It logs in (no error shows before the user acts; a wrong
// token gets one), sees the workers with the threads a running job keeps
// busy, a failed job's reason in its row, follows a job that waits (no
// worker runs its operation) until a worker that runs it joins, checks the
// page's progress, unit timeline and its legend follow the job to its end
// without a reload, and reads the operations catalogue: a user operation's
// version and parameters, every page within a 1400 and a 1000 px window.
// It saves screenshots in the test's directory, or in
// $BRAID_UI_SCREENSHOTS (how docs/dashboard*.png are made).
func TestDashboard(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium on PATH: install Debian's chromium package (`make test-deps` does, as root)")
	}
	shots := os.Getenv("BRAID_UI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	_, c := startServer(t)
	for _, name := range []string{"w1", "w2"} {
		start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", name, "--ops", "grayscale,noop", "--transport", "tcp")
	}
	waitWorkersUp(t, c, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reader, err := c.CreateToken(ctx, api.TokenSpec{Role: api.RoleRead, Name: "dashboard test"})
	if err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.WindowSize(1280, 860), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()

	checkLogin(t, bctx, c.URL(), reader.Token)
	failed := checkFailedJobRow(t, bctx, ctx, c)
	checkBusyThreads(t, bctx, ctx, c)
	job := followJob(t, bctx, ctx, c, shots)
	checkOperations(t, bctx, ctx, c, shots)
	pages := [][2]string{{"#/", "#workers tr[data-worker]"}, {"#/ops", "#ops tr[data-op]"},
		{"#/jobs/" + job, "#job-state.state-done"}, {"#/jobs/" + failed, "#job-state.state-failed"}}
	for _, width := range []int64{1400, 1000} {
		for _, p := range pages {
			checkFits(t, bctx, p[0], p[1], width)
		}
	}

	// The page itself needs no token, and forbids other origins.
	resp, err := http.Get(c.URL() + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("GET /ui/: %s, Content-Security-Policy %q", resp.Status, resp.Header.Get("Content-Security-Policy"))
	}
}

// evalJS evaluates a JavaScript expression in the page.
func evalJS[T any](t *testing.T, bctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS waits, up to a minute, for a JavaScript expression to be true.
func waitJS(t *testing.T, bctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// pageText is what the page's main part reads, for failure messages.
func pageText(bctx context.Context) string {
	ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main")?.innerText ?? ""`))
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return s
}

// checkLogin: the log-in form shows no error until the user acts; a
// token the server refuses gets one saying so, and typing again clears
// it; the right token opens the cluster page.
func checkLogin(t *testing.T, bctx context.Context, url, token string) {
	err := chromedp.Do(bctx,
		chromedp.Navigate(url+"/ui/"),
		chromedp.WaitVisible(css("#login-form")),
	)
	if err != nil {
		t.Fatalf("open the log-in page: %v", err)
	}
	const errorShown = `(() => { const e = document.getElementById("login-error");
		return !!e && e.offsetParent !== null && e.textContent.trim() !== ""; })()`
	if evalJS[bool](t, bctx, errorShown) {
		t.Errorf("the log-in page shows an error before any input: %q", evalJS[string](t, bctx, `document.getElementById("login-error").textContent`))
	}
	err = chromedp.Do(bctx,
		chromedp.SendKeys(css("#token"), "braid_000000000000_wrong"),
		chromedp.Click(css(`#login-form button[type=submit]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, bctx, "the refused token's error", errorShown)
	if msg := evalJS[string](t, bctx, `document.getElementById("login-error").textContent`); !strings.Contains(msg, "refused this token") {
		t.Errorf("a wrong token gives %q, want it to say the server refused the token", msg)
	}
	evalJS[string](t, bctx, `document.getElementById("token").value = ""`)
	if err := chromedp.Do(bctx, chromedp.SendKeys(css("#token"), token)); err != nil {
		t.Fatal(err)
	}
	if evalJS[bool](t, bctx, errorShown) {
		t.Errorf("the error stays while the user types a new token")
	}
	wctx, cancel := context.WithTimeout(bctx, time.Minute)
	defer cancel()
	err = chromedp.Do(wctx,
		chromedp.Click(css(`#login-form button[type=submit]`)),
		chromedp.WaitVisible(css(`#workers tr[data-worker="w2"]`)),
	)
	if err != nil {
		t.Fatalf("log in and list workers: %v; the page reads:\n%s", err, pageText(bctx))
	}
	if n := evalJS[int](t, bctx, `document.querySelectorAll("#workers tr[data-worker]").length`); n != 2 {
		t.Errorf("the page lists %d workers, want 2", n)
	}
}

// checkFailedJobRow: a job that fails (a module that traps) says why in
// its row of the cluster page. It returns the job.
func checkFailedJobRow(t *testing.T, bctx, ctx context.Context, c *client.Client) string {
	obj, err := c.Put(ctx, bytes.NewReader(wasmtest.Module(wasmtest.Trap...)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddOperation(ctx, api.OperationSpec{Name: "trap", Module: obj.ID, Summary: "traps"}); err != nil {
		t.Fatal(err)
	}
	job, err := c.Submit(ctx, api.JobSpec{Op: "trap", Input: obj.ID})
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Wait(ctx, job.ID, nil)
	if err != nil || j.State != api.JobFailed || j.Error == "" {
		t.Fatalf("the job of no image: %s %q, %v; want failed with an error", j.State, j.Error, err)
	}
	cell := fmt.Sprintf(`#jobs tr[data-job=%q] td.job-error`, job.ID)
	waitJS(t, bctx, "the failed job's row", fmt.Sprintf(`!!document.querySelector(%q)`, cell))
	if got := evalJS[string](t, bctx, fmt.Sprintf(`document.querySelector(%q).textContent`, cell)); got != j.Error {
		t.Errorf("the failed job's row says %q, want its error %q", got, j.Error)
	}
	return job.ID
}

// checkBusyThreads: while a job's units spin on w1 and w2, their rows
// count the threads busy, and free ones are the rest.
func checkBusyThreads(t *testing.T, bctx, ctx context.Context, c *client.Client) {
	obj, err := c.Put(ctx, bytes.NewReader(wasmtest.Module(wasmtest.Loop...)))
	if err != nil {
		t.Fatal(err)
	}
	// Its units run until their time limit, long past the checks; the job
	// then fails, which ends nothing else.
	_, err = c.AddOperation(ctx, api.OperationSpec{Name: "spin", Module: obj.ID, Summary: "loops until its time limit",
		Limits: api.OpLimits{TimeoutMS: 120_000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, api.JobSpec{Op: "spin", Input: obj.ID, Repeat: 4}); err != nil {
		t.Fatal(err)
	}
	const busyShown = `[...document.querySelectorAll("#workers tr[data-worker]")].some((r) => Number(r.querySelector("td.busy")?.textContent) > 0)`
	waitJS(t, bctx, "a worker's busy threads", busyShown)
	rows := evalJS[[][4]string](t, bctx, `[...document.querySelectorAll("#workers tr[data-worker]")].map((r) =>
		[r.dataset.worker, ...["threads", "busy", "free"].map((c) => r.querySelector("td." + c)?.textContent ?? "")])`)
	ws, err := c.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	busy := map[string]int{}
	for _, w := range ws {
		busy[w.Info.Name] = w.BusyThreads
	}
	for _, r := range rows {
		threads, _ := strconv.Atoi(r[1])
		b, errB := strconv.Atoi(r[2])
		f, errF := strconv.Atoi(r[3])
		if errB != nil || errF != nil || b+f != threads || b < 0 || b > threads {
			t.Errorf("worker %s: threads %q, busy %q, free %q: want busy and free to add up to the threads", r[0], r[1], r[2], r[3])
		}
		if b > 0 && busy[r[0]] == 0 {
			t.Errorf("worker %s: the page shows %d busy threads, the API none", r[0], b)
		}
	}
}

// followJob: a job no worker can run yet shows queued, with the reason;
// a worker that runs it joins, and the open job page follows it to its
// end: its count, one timeline bar per unit, and the timeline's legend.
// It returns the job.
func followJob(t *testing.T, bctx, ctx context.Context, c *client.Client, shots string) string {
	const units = 12
	in, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Submit(ctx, api.JobSpec{Op: "sobel", Input: in.ID, Repeat: units})
	if err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`#jobs tr[data-job=%q]`, job.ID)
	err = chromedp.Do(bctx, chromedp.WaitVisible(css(row+" a")))
	if err != nil {
		t.Fatalf("the queued job's row: %v", err)
	}
	waitJS(t, bctx, "the queued job's reason", fmt.Sprintf(`document.querySelector(%q)?.textContent.includes("sobel")`, row+" td.job-waiting"))
	screenshot(t, bctx, shots, "dashboard-cluster.png")
	err = chromedp.Do(bctx,
		chromedp.Click(css(row+" a")),
		chromedp.WaitVisible(css("#job-state")),
	)
	if err != nil {
		t.Fatalf("open the job's page: %v", err)
	}
	if state, err := chromedp.Run(bctx, chromedp.Text(css("#job-state"))); err != nil || state != api.JobQueued {
		t.Fatalf("job page shows state %q (%v), want %s", state, err, api.JobQueued)
	}

	// A worker that runs sobel joins; the open page follows the job.
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "w3", "--ops", "sobel", "--transport", "tcp")
	err = chromedp.Do(bctx,
		chromedp.WaitVisible(css(`#job-state.state-done`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`#gantt rect.unit[data-unit="%d"]`, units-1))),
	)
	if err != nil {
		t.Fatalf("follow the job to its end: %v", err)
	}
	if done, err := chromedp.Run(bctx, chromedp.Text(css("#job-done"))); err != nil || done != strconv.Itoa(units) {
		t.Errorf("the page says %q units done (%v), want %d", done, err, units)
	}
	if n := evalJS[int](t, bctx, `document.querySelectorAll("#gantt rect.unit").length`); n != units {
		t.Errorf("the timeline has %d unit bars, want %d", n, units)
	}
	legend := evalJS[string](t, bctx, `document.getElementById("gantt-legend")?.textContent ?? ""`)
	for _, want := range []string{"sent → returned", "computing at the worker", "running", "failed"} {
		if !strings.Contains(legend, want) {
			t.Errorf("the timeline's legend %q does not say %q", legend, want)
		}
	}
	final, err := c.Job(ctx, job.ID, false)
	if err != nil || final.State != api.JobDone {
		t.Fatalf("the job by the API: %+v, %v", final, err)
	}
	screenshot(t, bctx, shots, "dashboard.png")
	return job.ID
}

// checkOperations: the catalogue shows a user operation's version and
// each parameter's type, default and range on a clean line.
func checkOperations(t *testing.T, bctx, ctx context.Context, c *client.Client, shots string) {
	obj, err := c.Put(ctx, bytes.NewReader(wasmtest.Module(wasmtest.Trap...)))
	if err != nil {
		t.Fatal(err)
	}
	spec := api.OperationSpec{Name: "sigmablur", Module: obj.ID, Summary: "a blur whose parameters have no doc",
		Params: []api.Parameter{{Name: "sigma", Type: "float", Default: "2", Min: new(0.0), Max: new(64.0)}, {Name: "format", Type: "string"}}}
	for range 2 { // version 2
		if _, err := c.AddOperation(ctx, spec); err != nil {
			t.Fatal(err)
		}
		spec.Summary += "."
	}
	goTo(t, bctx, "#/ops", `#ops tr[data-op="sigmablur"]`)
	text := func(sel string) string {
		return evalJS[string](t, bctx, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? "(none)"`, sel))
	}
	for sel, want := range map[string]string{
		`#ops tr[data-op="sigmablur"] [data-param="sigma"]`:  "sigma float, default 2, range 0..64",
		`#ops tr[data-op="sigmablur"] [data-param="format"]`: "format string",
	} {
		if got := text(sel); got != want {
			t.Errorf("the operations page shows %q, want %q", got, want)
		}
	}
	if kind := text(`#ops tr[data-op="sigmablur"] .kind`); !strings.HasPrefix(kind, "v2 · wasm") {
		t.Errorf("the user operation's line %q does not start with its version and kind, v2 · wasm", kind)
	}
	if blur := text(`#ops tr[data-op="blur"] [data-param="sigma"]`); !strings.HasPrefix(blur, "sigma float, default 2 — standard deviation") {
		t.Errorf("the built-in blur's sigma reads %q", blur)
	}
	screenshot(t, bctx, shots, "dashboard-ops.png")
}

// goTo shows the dashboard's page hash (as its links do) and waits for
// the element ready names.
func goTo(t *testing.T, bctx context.Context, hash, ready string) {
	t.Helper()
	evalJS[string](t, bctx, fmt.Sprintf(`location.hash = %q`, hash))
	waitJS(t, bctx, "page "+hash, fmt.Sprintf(`location.hash === %q && !!document.querySelector(%q)`, hash, ready))
}

// checkFits shows page hash in a window width px wide and checks nothing
// sticks out sideways.
func checkFits(t *testing.T, bctx context.Context, hash, ready string, width int64) {
	t.Helper()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(width, 800)); err != nil {
		t.Fatal(err)
	}
	goTo(t, bctx, hash, ready)
	sizes := evalJS[[2]int](t, bctx, `[document.documentElement.scrollWidth, window.innerWidth]`)
	if sizes[0] > sizes[1] {
		t.Errorf("page %s at %d px: %d px wide, more than the window's %d", hash, width, sizes[0], sizes[1])
	}
}

// screenshot saves the whole page as PNG in dir.
func screenshot(t *testing.T, bctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: PNG; less: JPEG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
